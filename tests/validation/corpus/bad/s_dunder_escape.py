"""Broken: walks object internals to reach other classes (a sandbox escape attempt)."""
import random


class DunderEscapeEnv:
    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, 9)
        self.classes = ().__class__.__bases__[0].__subclasses__()
        return f"There are {len(self.classes)} classes. Guess a digit.", {}

    def step(self, action):
        ok = action.strip() == str(self.secret)
        return ("Yes" if ok else "No"), float(ok), ok, False, {}
