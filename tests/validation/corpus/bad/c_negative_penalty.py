"""Broken: invalid actions cost -1, below the declared reward range [0, 1]."""
import random
import re


class NegativePenaltyEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, 50)
        self.turn = 0
        return "Guess 1-50 with \\boxed{N}.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{(\d+)\}", action)
        if not m:
            return "Invalid action: penalty.", -1.0, False, self.turn >= 10, {}
        ok = int(m[-1]) == self.secret
        return ("Correct!" if ok else "No."), float(ok), ok, self.turn >= 10 and not ok, {}

    def solution(self):
        return ["\\boxed{%d}" % self.secret]
