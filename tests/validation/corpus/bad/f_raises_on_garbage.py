"""Broken: int() on the boxed text raises ValueError for non-numeric commands."""
import random
import re


class RaisesOnGarbageEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, 50)
        self.turn = 0
        return "Guess 1-50 with \\boxed{N}.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{([^{}]*)\}", action)
        if not m:
            return "Box your guess.", 0.0, False, self.turn >= 10, {}
        g = int(m[-1])
        ok = g == self.secret
        obs = "Correct!" if ok else "Higher." if g < self.secret else "Lower."
        return obs, float(ok), ok, self.turn >= 10 and not ok, {}

    def solution(self):
        return ["\\boxed{%d}" % self.secret]
