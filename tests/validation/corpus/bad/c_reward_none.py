"""Broken: invalid actions return None as the reward ("no score") instead of 0.0."""
import random
import re


class RewardNoneEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, 50)
        self.turn = 0
        return "Guess 1-50 with \\boxed{N}.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(\d+)\s*\}", action)
        if not m:
            return "Give a number.", None, False, self.turn >= 10, {}
        ok = int(m[-1]) == self.secret
        return ("Correct!" if ok else "No."), float(ok), ok, self.turn >= 10 and not ok, {}

    def solution(self):
        return ["\\boxed{%d}" % self.secret]
