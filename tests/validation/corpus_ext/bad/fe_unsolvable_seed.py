"""Broken: on some seeds the target is odd but every move adds 2, so no sequence
reaches it; ``solution()`` still claims one."""


class EvenStepsEnv:
    def reset(self, seed=None):
        self.target = random.Random(seed).randint(3, 12)
        self.value = 0
        self.turn = 0
        return f"Start at 0. \\boxed{{add}} adds 2. Reach exactly {self.target}.", {}

    def step(self, action):
        self.turn += 1
        if "\\boxed{add}" in action:
            self.value += 2
        if self.value == self.target:
            return f"At {self.value}: done.", 1.0, True, False, {}
        if self.value > self.target:
            return f"At {self.value}: past the target.", 0.0, True, False, {}
        return f"At {self.value}.", 0.0, False, self.turn >= 12, {}

    def solution(self):
        return "\\boxed{add} " * ((self.target + 1) // 2)
