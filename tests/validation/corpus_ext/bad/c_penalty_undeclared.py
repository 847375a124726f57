"""Broken: a format error costs -0.1 (copied from the reference tool-use base), but the
environment declares no reward range, so [0, 1] applies and -0.1 is outside it."""


class StrictCounterEnv:
    def reset(self, seed=None):
        self.goal = random.Random(seed).randint(3, 7)
        self.value = 0
        self.turn = 0
        return f"Reach {self.goal} with \\boxed{{inc}}; anything else is a format error.", {}

    def step(self, action):
        self.turn += 1
        if action.strip() != "\\boxed{inc}":
            return "Format error.", -0.1, False, self.turn >= 20, {}
        self.value += 1
        ok = self.value == self.goal
        return f"Value {self.value}.", float(ok), ok, self.turn >= 20 and not ok, {}

    def solution(self):
        return ["\\boxed{inc}"] * self.goal
