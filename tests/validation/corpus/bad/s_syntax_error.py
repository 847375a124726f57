"""Broken: a missing colon (syntax error)."""
import random


class SyntaxErrorEnv:
    def reset(self, seed=None)
        self.secret = random.Random(seed).randint(1, 9)
        return "Guess a digit.", {}

    def step(self, action):
        return "No.", 0.0, False, False, {}
