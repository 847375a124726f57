"""Broken: step() returns the reward as a formatted string."""
import random
import re


class RewardStringEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, 50)
        self.turn = 0
        return "Guess 1-50 with \\boxed{N}.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{(\d+)\}", action)
        ok = bool(m) and int(m[-1]) == self.secret
        return ("Correct!" if ok else "No."), f"{float(ok):.1f}", ok, self.turn >= 10 and not ok, {}

    def solution(self):
        return ["\\boxed{%d}" % self.secret]
