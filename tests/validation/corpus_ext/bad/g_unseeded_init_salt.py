"""Broken, a reference habit: an offset drawn from the module-level ``random`` in
``__init__`` changes every puzzle per instance, whatever the seed."""


class OffsetSumEnv:
    def __init__(self):
        self.offset = random.randint(1, 1_000_000)

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.nums = [rng.randint(1, 20) for _ in range(3)]
        self.turn = 0
        return f"Add {self.nums} and {self.offset}; reply \\boxed{{N}}.", {}

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(\d+)\s*\}", action)
        ok = bool(m) and int(m[-1]) == sum(self.nums) + self.offset
        return ("Right." if ok else "Try again."), float(ok), ok, self.turn >= 8 and not ok, {}

    def solution(self):
        return ["\\boxed{%d}" % (sum(self.nums) + self.offset)]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
