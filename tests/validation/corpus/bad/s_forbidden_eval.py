"""Broken: evaluates the agent's expression with eval()."""
import random
import re


class ForbiddenEvalEnv:
    def reset(self, seed=None):
        self.target = random.Random(seed).randint(10, 99)
        self.turn = 0
        return f"Write an expression equal to {self.target} in \\boxed{{}}.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{([^{}]*)\}", action)
        value = eval(m[-1]) if m else None
        ok = value == self.target
        return ("Correct!" if ok else f"Got {value}."), float(ok), ok, self.turn >= 10 and not ok, {}
