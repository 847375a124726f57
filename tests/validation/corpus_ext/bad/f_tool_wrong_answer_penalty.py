"""Broken: a reference-style tool-use environment (``ToolUseBaseEnv`` unimported) that
charges -0.5 for a wrong answer, below the tool-use range [-0.1, 1]."""


class CapitalEnv(ToolUseBaseEnv):
    def reset(self, seed=None):
        rng = random.Random(seed)
        self._state = {"capitals": {"France": "Paris", "Peru": "Lima", "Kenya": "Nairobi", "Japan": "Tokyo"}}
        self.country = rng.choice(sorted(self._state["capitals"]))
        self._tools = {
            "capital_of": {
                "description": "The capital city of a country.",
                "parameters": {"type": "object", "properties": {"country": {"type": "string"}}, "required": ["country"]},
            }
        }
        self._expected_answer = self._state["capitals"][self.country]
        self.turn_count = 0
        return f"What is the capital of {self.country}? Look it up, then <answer>city</answer>.", {}

    def tool_capital_of(self, country):
        return self._state["capitals"].get(country, "unknown country")

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        if "<answer>" in action and reward == 0.0:
            reward = -0.5  # punish wrong answers hard
        return obs, reward, terminated, truncated, info

    def solution(self):
        call = json.dumps({"name": "capital_of", "arguments": {"country": self.country}})
        return f"<tool_call>{call}</tool_call><answer>{self._expected_answer}</answer>"
