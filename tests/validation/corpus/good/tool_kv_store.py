"""Tool use: follow instructions against a key-value store, checked on the final state."""
import json
import random
import re

CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)


class ToolKvStoreEnv:
    def __init__(self):
        self.turn = 0
        self.max_turns = 10

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        keys = rng.sample(["alpha", "beta", "gamma", "delta", "omega"], 3)
        self.state = {k: rng.randint(1, 50) for k in keys}
        self.src, self.dst = keys[0], "total"
        self.goal = {"total": self.state[keys[0]] + self.state[keys[1]], "drop": keys[2]}
        self.pair = keys[:2]
        self.turn = 0
        return (f"Keys {sorted(self.state)} hold hidden numbers. Set 'total' to {self.pair[0]} + {self.pair[1]} and "
                f"delete '{keys[2]}'. Tools: get(key), set(key, value), delete(key), done()."), {}

    def _call(self, name, args):
        if name == "get":
            key = args.get("key")
            return f"{key} = {self.state[key]}" if key in self.state else f"no key {key!r}"
        if name == "set":
            if not isinstance(args.get("value"), int) or not isinstance(args.get("key"), str):
                return "set needs a string key and an integer value"
            self.state[args["key"]] = args["value"]
            return "ok"
        if name == "delete":
            return "ok" if self.state.pop(args.get("key"), None) is not None else "no such key"
        if name == "done":
            return "done"
        return f"unknown tool {name!r}"

    def _progress(self):
        parts = [self.state.get("total") == self.goal["total"], self.goal["drop"] not in self.state]
        return sum(parts) / 2

    def _play(self, action):
        self.turn += 1
        out, finished = [], False
        for payload in CALL.findall(action):
            try:
                call = json.loads(payload)
                name, args = call["name"], call.get("arguments") or {}
                if not isinstance(args, dict):
                    raise TypeError
            except (ValueError, KeyError, TypeError):
                out.append("malformed tool call")
                continue
            out.append(self._call(name, args))
            finished = finished or name == "done"
        progress = self._progress()
        done = finished and progress == 1.0
        reward = 1.0 if done else 0.4 * progress
        truncated = not done and self.turn >= self.max_turns
        return "\n".join(out) or "Call a tool with <tool_call>{...}</tool_call>.", reward, done, truncated, {}

    def solution(self):
        a, b = self.pair
        calls = [
            {"name": "get", "arguments": {"key": a}},
            {"name": "get", "arguments": {"key": b}},
            {"name": "set", "arguments": {"key": "total", "value": self.goal["total"]}},
            {"name": "delete", "arguments": {"key": self.goal["drop"]}},
            {"name": "done", "arguments": {}},
        ]
        return ["<tool_call>%s</tool_call>" % json.dumps(c) for c in calls]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
