"""Broken: a reference-style tool-use environment whose ``solution()`` answers with the
total of the first puzzle it was reset to, not the one ``reset(seed)`` drew."""


class BasketEnv(ToolUseBaseEnv):
    def reset(self, seed=None):
        rng = random.Random(seed)
        self._state = {"basket": {f"item{i}": rng.randint(1, 20) for i in range(3)}}
        self._tools = {"view_basket": {"description": "Items and prices.", "parameters": {"type": "object", "properties": {}}}}
        self._expected_answer = str(sum(self._state["basket"].values()))
        if not hasattr(self, "first_total") and seed is not None:
            self.first_total = self._expected_answer
        self.turn_count = 0
        return "What is the basket's total price? Use the tools, then <answer>N</answer>.", {}

    def tool_view_basket(self):
        return json.dumps(self._state["basket"])

    def solution(self):
        call = json.dumps({"name": "view_basket", "arguments": {}})
        return f"<tool_call>{call}</tool_call><answer>{self.first_total}</answer>"
