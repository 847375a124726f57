"""Broken (with its hint): a fixed vault code, and the hint spells it out."""
import re


class HintLeakCodeEnv:
    def __init__(self):
        self.turn = 0
        self.code = "7319"

    def reset(self, seed=None):
        self.turn = 0
        return "Open the vault: try 4-digit codes with \\boxed{CODE}. I tell you how many digits are right.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(\d{4})\s*\}", action)
        if not m:
            return "Four digits.", 0.0, False, self.turn >= 10, {}
        right = sum(a == b for a, b in zip(m[-1], self.code))
        ok = right == 4
        return ("The vault opens!" if ok else f"{right} digits right."), float(ok), ok, self.turn >= 10 and not ok, {}

    def solution(self):
        return ["\\boxed{%s}" % self.code]
