"""Broken: the declared ``reward_range`` has its ends swapped (low > high)."""


class ReversedRangeEnv:
    reward_range = (1.0, 0.0)

    def reset(self, seed=None):
        self.n = random.Random(seed).randint(1, 9)
        self.turn = 0
        return "Guess 1-9 with \\boxed{N}.", {}

    def step(self, action):
        self.turn += 1
        ok = f"\\boxed{{{self.n}}}" in action
        return ("Yes." if ok else "No."), float(ok), ok, self.turn >= 9 and not ok, {}

    def solution(self):
        return ["\\boxed{%d}" % self.n]
