"""Broken: past the 12th turn every step burns about 0.1 s of CPU (under the per-call
bound), so the fuzz stage's long episodes cannot finish within the validation's time
budget (labelled with a small budget; the shorter episodes of earlier stages stay fast)."""


class SlowCounterEnv:
    def reset(self, seed=None):
        self.goal = random.Random(seed).randint(3, 6)
        self.value = 0
        self.turn = 0
        return f"Reach {self.goal} with \\boxed{{inc}}.", {}

    def step(self, action):
        self.turn += 1
        if self.turn > 12:
            sum(i * i for i in range(400_000))  # slow on purpose
        if "\\boxed{inc}" in action:
            self.value += 1
        ok = self.value == self.goal
        return f"Value {self.value}.", float(ok), ok, self.turn >= 20 and not ok, {}

    def solution(self):
        return ["\\boxed{inc}"] * self.goal
