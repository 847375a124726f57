"""Sound, reference style: a warehouse with two tools on a state dict, subclassing the
reference ``ToolUseBaseEnv`` unimported; a numeric answer with thousands separators."""


class WarehouseEnv(ToolUseBaseEnv):
    def reset(self, seed=None):
        rng = random.Random(seed)
        self._state = {"stock": {f"bin{i}": rng.randint(100, 900) for i in range(1, 5)}}
        self.bins = sorted(rng.sample(list(self._state["stock"]), 2))
        self._tools = {
            "list_bins": {"description": "Names of every bin.", "parameters": {"type": "object", "properties": {}}},
            "count": {
                "description": "Units stored in one bin.",
                "parameters": {"type": "object", "properties": {"bin": {"type": "string"}}, "required": ["bin"]},
            },
        }
        total = sum(self._state["stock"][b] * 10 for b in self.bins)
        self._expected_answer = f"{total:,}"
        self.turn_count = 0
        return (f"Each unit weighs 10 kg. How many kg are stored in {self.bins[0]} and {self.bins[1]} together? "
                "Answer with <answer>N</answer>."), {}

    def tool_list_bins(self):
        return ", ".join(sorted(self._state["stock"]))

    def tool_count(self, bin):
        return str(self._state["stock"].get(bin, "unknown bin"))

    def solution(self):
        calls = "".join(
            "<tool_call>%s</tool_call>\n" % json.dumps({"name": "count", "arguments": {"bin": b}}) for b in self.bins
        )
        return calls + f"<answer>{self._expected_answer}</answer>"
