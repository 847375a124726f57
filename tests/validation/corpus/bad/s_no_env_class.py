"""Broken: the class is not named *Env."""
import random
import re


class GuessingGame:
    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, 50)
        return "Guess 1-50 with \\boxed{N}.", {}

    def step(self, action):
        m = re.findall(r"\\boxed\{(\d+)\}", action)
        ok = bool(m) and int(m[-1]) == self.secret
        return ("Correct!" if ok else "No."), float(ok), ok, False, {}
