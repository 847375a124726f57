"""Broken, a reference habit: an offset drawn from the module-level ``random`` in
``__init__`` changes every puzzle per instance, whatever the seed."""


class OffsetSumEnv:
    def __init__(self):
        self.offset = random.randint(1, 1_000_000)

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.nums = [rng.randint(1, 20) for _ in range(3)]
        self.turn = 0
        return f"Add {self.nums} and {self.offset}; reply \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(\d+)\s*\}", action)
        ok = bool(m) and int(m[-1]) == sum(self.nums) + self.offset
        return ("Right." if ok else "Try again."), float(ok), ok, self.turn >= 8 and not ok, {}

    def solution(self):
        return ["\\boxed{%d}" % (sum(self.nums) + self.offset)]
