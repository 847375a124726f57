"""Broken: solution() refers to an attribute that does not exist."""
import random
import re


class SolutionRaisesEnv:
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
            return "Give a number.", 0.0, False, self.turn >= 10, {}
        g = int(m[-1])
        ok = g == self.secret
        obs = "Correct!" if ok else "Higher." if g < self.secret else "Lower."
        return obs, float(ok), ok, self.turn >= 10 and not ok, {}

    def solution(self):
        return ["\\boxed{%d}" % self.answer]
