"""Broken: reset() returns the board as a list of rows instead of a string."""
import random
import re


class ResetWrongTypesEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.board = [[rng.randint(0, 1) for _ in range(3)] for _ in range(3)]
        self.turn = 0
        return self.board, {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{(\d)\}", action)
        ones = sum(map(sum, self.board))
        ok = bool(m) and int(m[-1]) == ones
        return ("Correct!" if ok else "No."), float(ok), ok, self.turn >= 10 and not ok, {}

    def solution(self):
        return ["\\boxed{%d}" % sum(map(sum, self.board))]
