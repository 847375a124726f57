"""Broken: the turn limit is off by one and truncates every episode after one step."""
import random
import re


class TruncatesFirstStepEnv:
    def __init__(self):
        self.max_turns = 10
        self.turn = 0

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, 50)
        self.turn = self.max_turns - 1
        return "Guess 1-50 with \\boxed{N}.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{(\d+)\}", action)
        ok = bool(m) and int(m[-1]) == self.secret
        return ("Correct!" if ok else "No."), float(ok), ok, self.turn >= self.max_turns and not ok, {}

    def solution(self):
        return ["\\boxed{%d}" % self.secret]
