"""Broken, old Gym habit: ``reset()`` returns the bare observation instead of
``(observation, info)``; the reference implementation's own check rejects it too."""


class BareResetEnv:
    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, 9)
        self.turn = 0
        return "Guess a digit 1-9 with \\boxed{N}."

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(\d)\s*\}", action)
        ok = bool(m) and int(m[-1]) == self.secret
        return ("Yes!" if ok else "No."), float(ok), ok, self.turn >= 9 and not ok, {}

    def solution(self):
        return ["\\boxed{%d}" % self.secret]
