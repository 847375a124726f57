"""Tool use: look up conversion factors and answer a two-step unit conversion."""
import json
import random
import re

CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)
FACTORS = {("km", "m"): 1000, ("m", "cm"): 100, ("h", "min"): 60, ("min", "s"): 60, ("kg", "g"): 1000, ("g", "mg"): 1000}
CHAINS = [("km", "m", "cm"), ("h", "min", "s"), ("kg", "g", "mg")]


class ToolUnitConvertEnv:
    def __init__(self):
        self.turn = 0
        self.max_turns = 8

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.chain = rng.choice(CHAINS)
        self.amount = rng.randint(2, 9)
        self.lookups = 0
        self.turn = 0
        a, _, c = self.chain
        return f"Convert {self.amount} {a} to {c}. Tool: factor(from_unit, to_unit) converts one step. Answer <answer>N</answer>.", {}

    def _expected(self):
        a, b, c = self.chain
        return self.amount * FACTORS[(a, b)] * FACTORS[(b, c)]

    def _play(self, action):
        self.turn += 1
        out = []
        for payload in CALL.findall(action):
            try:
                call = json.loads(payload)
                args = call.get("arguments") or {}
                key = (args.get("from_unit"), args.get("to_unit"))
            except (ValueError, AttributeError, TypeError):
                out.append("malformed tool call")
                continue
            if call.get("name") == "factor" and key in FACTORS:
                self.lookups += 1
                out.append(f"1 {key[0]} = {FACTORS[key]} {key[1]}")
            else:
                out.append("unknown conversion")
        reward, done = 0.0, False
        answers = ANSWER.findall(action)
        if answers:
            if answers[-1].strip() == str(self._expected()):
                reward, done = 1.0, True
                out.append("correct")
            else:
                out.append("incorrect")
        truncated = not done and self.turn >= self.max_turns
        return "\n".join(out) or "Call factor or give an answer.", reward, done, truncated, {}

    def solution(self):
        a, b, c = self.chain
        return [
            '<tool_call>{"name": "factor", "arguments": {"from_unit": "%s", "to_unit": "%s"}}</tool_call>' % (a, b),
            '<tool_call>{"name": "factor", "arguments": {"from_unit": "%s", "to_unit": "%s"}}</tool_call>' % (b, c),
            "<answer>%d</answer>" % self._expected(),
        ]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
