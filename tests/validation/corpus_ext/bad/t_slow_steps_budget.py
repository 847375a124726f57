"""Broken: past the 12th turn every step spins for 0.1 s of wall time (under the per-call
bound, on any machine), so the fuzz stage's long episodes cannot finish within the validation's time
budget (labelled with a small budget; the shorter episodes of earlier stages stay fast)."""


import datetime


class SlowCounterEnv:
    def reset(self, seed=None):
        self.goal = random.Random(seed).randint(3, 6)
        self.value = 0
        self.turn = 0
        return f"Reach {self.goal} with \\boxed{{inc}}.", {}

    def step(self, action):
        self.turn += 1
        if self.turn > 12:
            started = datetime.datetime.now()
            while (datetime.datetime.now() - started).total_seconds() < 0.1:  # slow on purpose
                pass
        if "\\boxed{inc}" in action:
            self.value += 1
        ok = self.value == self.goal
        return f"Value {self.value}.", float(ok), ok, self.turn >= 20 and not ok, {}

    def solution(self):
        return ["\\boxed{inc}"] * self.goal
