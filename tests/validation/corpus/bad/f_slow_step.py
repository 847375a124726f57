"""Broken: 'checks' every character of the action against a table with a nested loop, so
a long action takes far too long (the check gives up after a second of wall time, so the
call is slow on any machine, never hung)."""
import datetime
import random
import re


class SlowStepEnv:
    def __init__(self):
        self.turn = 0
        self.table = list(range(10000))

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, 50)
        self.turn = 0
        return "Guess 1-50 with \\boxed{N}.", {}

    def step(self, action):
        self.turn += 1
        noise = 0
        started = datetime.datetime.now()
        for ch in action:
            for t in self.table:
                noise += (ord(ch) ^ t) & 1
            if (datetime.datetime.now() - started).total_seconds() > 1.0:
                break
        m = re.findall(r"\\boxed\{\s*(\d+)\s*\}", action)
        ok = bool(m) and int(m[-1]) == self.secret
        return ("Correct!" if ok else "No."), float(ok), ok, self.turn >= 10 and not ok, {}

    def solution(self):
        return ["\\boxed{%d}" % self.secret]
