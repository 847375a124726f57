"""Broken: the closeness bonus 1 - |guess - secret| / 50 is not clamped, so a far-off
guess earns a large negative reward, outside the declared range [0, 1]."""
import random
import re


class RewardOutOfRangeEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, 50)
        self.turn = 0
        return "Guess 1-50 with \\boxed{N}; closer guesses earn more.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(\d+)\s*\}", action)
        if not m:
            return "Give a number.", 0.0, False, self.turn >= 10, {}
        g = int(m[-1])
        if g == self.secret:
            return "Correct!", 1.0, True, False, {}
        closeness = 0.5 * (1 - abs(g - self.secret) / 50)
        return ("Higher." if g < self.secret else "Lower."), closeness, False, self.turn >= 10, {}

    def solution(self):
        return ["\\boxed{%d}" % self.secret]
