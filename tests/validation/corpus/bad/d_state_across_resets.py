"""Broken: a games-played counter survives reset() and shifts the target, so the same
seed gives a different puzzle every time."""
import random
import re


class StateAcrossResetsEnv:
    def __init__(self):
        self.games = 0
        self.turn = 0

    def reset(self, seed=None):
        self.games += 1
        self.secret = random.Random(seed).randint(1, 40) + self.games
        self.turn = 0
        return f"Game {self.games}: guess the number with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{(\d+)\}", action)
        if not m:
            return "Give a number.", 0.0, False, self.turn >= 10, {}
        g = int(m[-1])
        ok = g == self.secret
        obs = "Correct!" if ok else "Higher." if g < self.secret else "Lower."
        return obs, float(ok), ok, self.turn >= 10 and not ok, {}

    def solution(self):
        return ["\\boxed{%d}" % self.secret]
