"""Tool use: buy the cheapest item of a category within budget, then confirm."""
import json
import random
import re

CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
CATALOG = {
    "lamp": [("L1", 19), ("L2", 25), ("L3", 31)],
    "chair": [("C1", 45), ("C2", 39), ("C3", 52)],
    "mug": [("M1", 7), ("M2", 5), ("M3", 9)],
}


class ToolShopEnv:
    def __init__(self):
        self.turn = 0
        self.max_turns = 8

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.category = rng.choice(sorted(CATALOG))
        prices = dict(CATALOG[self.category])
        self.best = min(prices, key=prices.get)
        self.cart = []
        self.turn = 0
        return f"Buy the cheapest {self.category}. Tools: search(category), buy(item_id), checkout().", {}

    def _play(self, action):
        self.turn += 1
        out, done, reward = [], False, 0.0
        for payload in CALL.findall(action):
            try:
                call = json.loads(payload)
                name, args = call["name"], call.get("arguments") or {}
                if not isinstance(args, dict):
                    raise TypeError
            except (ValueError, KeyError, TypeError):
                out.append("malformed tool call")
                continue
            if name == "search":
                items = CATALOG.get(args.get("category"), [])
                out.append(json.dumps([{"id": i, "price": p} for i, p in items]) if items else "no such category")
            elif name == "buy":
                item = args.get("item_id")
                if any(item == i for items in CATALOG.values() for i, _ in items):
                    self.cart.append(item)
                    out.append(f"added {item}")
                else:
                    out.append("unknown item")
            elif name == "checkout":
                done = True
                reward = 1.0 if self.cart == [self.best] else 0.0
                out.append("order placed" if reward else "order placed, but it is not what was asked")
            else:
                out.append(f"unknown tool {name!r}")
            if done:
                break
        truncated = not done and self.turn >= self.max_turns
        return "\n".join(out) or "Use a tool.", reward, done, truncated, {"cart": list(self.cart)}

    def solution(self):
        return [
            '<tool_call>{"name": "search", "arguments": {"category": "%s"}}</tool_call>' % self.category,
            '<tool_call>{"name": "buy", "arguments": {"item_id": "%s"}}</tool_call>' % self.best,
            '<tool_call>{"name": "checkout", "arguments": {}}</tool_call>',
        ]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
