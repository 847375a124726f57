"""Broken (with its hint): a vault code drawn from the seed, and the hint spells out seed 0's."""
import random
import re


class HintLeakCodeEnv:
    def __init__(self):
        self.turn = 0
        self.code = "7319"

    def reset(self, seed=None):
        self.over = False
        self.code = "".join(random.Random(seed).choice("0123456789") for _ in range(4))
        self.turn = 0
        return "Open the vault: try 4-digit codes with \\boxed{CODE}. I tell you how many digits are right.", {}

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(\d{4})\s*\}", action)
        if not m:
            return "Four digits.", 0.0, False, self.turn >= 10, {}
        right = sum(a == b for a, b in zip(m[-1], self.code))
        ok = right == 4
        return ("The vault opens!" if ok else f"{right} digits right."), float(ok), ok, self.turn >= 10 and not ok, {}

    def solution(self):
        return ["\\boxed{%s}" % self.code]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
