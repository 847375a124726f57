"""Broken: solution() answers for the puzzle drawn in __init__, not the one reset() drew."""
import random
import re


class SolutionStaleEnv:
    def __init__(self):
        self.turn = 0
        self.first_secret = random.Random(12345).randint(1, 50)

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, 50)
        if self.secret == self.first_secret:
            self.secret = self.secret % 50 + 1
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
        return ["\\boxed{%d}" % self.first_secret]
