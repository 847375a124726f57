"""Broken: uses ``np`` (the reference loader binds numpy as np), but this domain does not
allow numpy, so the name is not there."""


class NoiseEnv:
    def reset(self, seed=None):
        self.rng = np.random.default_rng(seed)
        self.level = int(self.rng.integers(1, 10))
        return "Guess the noise level 1-9 with \\boxed{N}.", {}

    def step(self, action):
        ok = f"\\boxed{{{self.level}}}" in action
        return ("Right." if ok else "Wrong."), float(ok), ok, False, {}

    def solution(self):
        return ["\\boxed{%d}" % self.level]
