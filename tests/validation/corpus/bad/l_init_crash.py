"""Broken: __init__ looks up a difficulty level that does not exist (KeyError)."""
import random
import re

LEVELS = {"easy": 20, "medium": 50, "hard": 100}


class InitCrashEnv:
    def __init__(self, level="normal"):
        self.limit = LEVELS[level]
        self.turn = 0

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, self.limit)
        self.turn = 0
        return f"Guess 1-{self.limit} with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{(\d+)\}", action)
        ok = bool(m) and int(m[-1]) == self.secret
        return ("Correct!" if ok else "No."), float(ok), ok, self.turn >= 10 and not ok, {}

    def solution(self):
        return ["\\boxed{%d}" % self.secret]
