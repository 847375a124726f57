"""Broken: reset() draws from an empty candidate list for some seeds (IndexError)."""
import random
import re


class ResetRaisesEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        rng = random.Random(seed)
        size = rng.choice([0, 0, 0, 4])
        self.secret = rng.choice(list(range(1, size + 1)))
        self.turn = 0
        return "Guess the number with \\boxed{N}.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{(\d+)\}", action)
        ok = bool(m) and int(m[-1]) == self.secret
        return ("Correct!" if ok else "No."), float(ok), ok, self.turn >= 10 and not ok, {}

    def solution(self):
        return ["\\boxed{%d}" % self.secret]
