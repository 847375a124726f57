"""Broken: uses ``time`` without importing it; the reference loader's namespace holds the
common modules, but not ``time`` (nor may the sandbox import it)."""


class StopwatchEnv:
    def reset(self, seed=None):
        self.rng = random.Random(seed)
        self.started = time.time()
        self.target = self.rng.randint(2, 5)
        return f"Say \\boxed{{lap}} {self.target} times.", {}

    def step(self, action):
        return "ok", 0.0, False, False, {}

    def solution(self):
        return ["\\boxed{lap}"] * self.target
