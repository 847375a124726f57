"""Broken, a reference habit: ``import time`` to seed from the clock; ``time`` is not an
allowed module."""
import time


class ClockSeedEnv:
    def reset(self, seed=None):
        self.rng = random.Random(seed if seed is not None else time.time())
        self.n = self.rng.randint(1, 9)
        return "Guess 1-9 with \\boxed{N}.", {}

    def step(self, action):
        ok = f"\\boxed{{{self.n}}}" in action
        return ("Yes." if ok else "No."), float(ok), ok, False, {}

    def solution(self):
        return ["\\boxed{%d}" % self.n]
