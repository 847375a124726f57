"""Tool use: compute (a + b) * c with the add and multiply tools, then answer."""
import json
import random
import re

CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)


class ToolCalculatorEnv:
    def __init__(self):
        self.turn = 0
        self.max_turns = 8

    def get_tool_schemas(self):
        num = {"type": "number"}
        return [
            {"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {"x": num, "y": num}, "required": ["x", "y"]}}}
            for n in ("add", "multiply")
        ]

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.a, self.b, self.c = rng.randint(10, 99), rng.randint(10, 99), rng.randint(3, 19)
        self.used = set()
        self.turn = 0
        return (f"Compute ({self.a} + {self.b}) * {self.c}. Use the tools add(x, y) and multiply(x, y) via "
                "<tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>, then reply <answer>N</answer>."), {}

    def _play(self, action):
        self.turn += 1
        results = []
        for payload in CALL.findall(action):
            try:
                call = json.loads(payload)
                name, args = call["name"], call.get("arguments", {})
                x, y = float(args["x"]), float(args["y"])
            except (ValueError, KeyError, TypeError, AttributeError):
                results.append("error: malformed tool call")
                continue
            if name == "add":
                results.append(f"add -> {x + y:g}")
                self.used.add("add")
            elif name == "multiply":
                results.append(f"multiply -> {x * y:g}")
                self.used.add("multiply")
            else:
                results.append(f"error: unknown tool {name!r}")
        answers = ANSWER.findall(action)
        reward, done = 0.0, False
        if answers:
            ok = answers[-1].strip() == str((self.a + self.b) * self.c)
            done = ok
            reward = 1.0 if ok and len(self.used) == 2 else 0.5 if ok else 0.0
            results.append("correct" if ok else "wrong answer, keep trying")
        if not results:
            results.append("No tool call or answer found.")
        truncated = not done and self.turn >= self.max_turns
        return "\n".join(results), reward, done, truncated, {}

    def solution(self):
        s = self.a + self.b
        return [
            '<tool_call>{"name": "add", "arguments": {"x": %d, "y": %d}}</tool_call>' % (self.a, self.b),
            '<tool_call>{"name": "multiply", "arguments": {"x": %d, "y": %d}}</tool_call>' % (s, self.c),
            "<answer>%d</answer>" % (s * self.c),
        ]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
