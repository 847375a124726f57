"""Broken, old Gym habit: ``step()`` returns the 4-tuple ``(obs, reward, done, info)``."""


class FourTupleEnv:
    def reset(self, seed=None):
        self.target = random.Random(seed).randint(2, 6)
        self.count = 0
        return f"Press \\boxed{{tap}} exactly {self.target} times, then \\boxed{{stop}}.", {}

    def step(self, action):
        if "\\boxed{tap}" in action:
            self.count += 1
            return f"{self.count} taps.", 0.0, self.count > 10, {}
        if "\\boxed{stop}" in action:
            ok = self.count == self.target
            return ("Exactly right." if ok else "Wrong count."), float(ok), True, {}
        return "Tap or stop.", 0.0, False, {}

    def solution(self):
        return ["\\boxed{tap}"] * self.target + ["\\boxed{stop}"]
