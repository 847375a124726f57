"""Broken: reset() draws the secret from the global generator and ignores the seed."""
import random
import re


class ResetIgnoresSeedEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        self.secret = random.randint(1, 1000)
        self.turn = 0
        return "Guess 1-1000 with \\boxed{N}; I say higher or lower.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{(\d+)\}", action)
        if not m:
            return "Give a number.", 0.0, False, self.turn >= 12, {}
        g = int(m[-1])
        ok = g == self.secret
        obs = "Correct!" if ok else "Higher." if g < self.secret else "Lower."
        return obs, float(ok), ok, self.turn >= 12 and not ok, {}

    def solution(self):
        return ["\\boxed{%d}" % self.secret]
