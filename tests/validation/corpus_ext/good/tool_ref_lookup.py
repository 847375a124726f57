"""Sound, reference style: a tool-use environment subclassing ``ToolUseBaseEnv`` without
importing it (the reference loader provides the base); the solution is the reference's
text of tool calls and the answer."""


class PriceLookupEnv(ToolUseBaseEnv):
    def reset(self, seed=None):
        rng = random.Random(seed)
        items = ["lamp", "desk", "chair", "shelf", "rug"]
        self._state = {"prices": {name: rng.randint(5, 90) for name in items}, "item": rng.choice(items)}
        self._tools = {
            "get_price": {
                "description": "Price of one item in dollars.",
                "parameters": {"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]},
            }
        }
        self._expected_answer = str(self._state["prices"][self._state["item"]] * 3)
        self.turn_count = 0
        return f"What do three {self._state['item']}s cost? Use the tools, then <answer>N</answer>.", {}

    def tool_get_price(self, item):
        if item not in self._state["prices"]:
            return f"No such item: {item}"
        return str(self._state["prices"][item])

    def solution(self):
        call = json.dumps({"name": "get_price", "arguments": {"item": self._state["item"]}})
        return f"<tool_call>{call}</tool_call>\n<answer>{self._expected_answer}</answer>"
