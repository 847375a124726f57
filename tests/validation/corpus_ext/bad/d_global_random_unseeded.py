"""Broken, a reference habit: the secret is drawn from the module-level ``random`` and the
seed is ignored, so the same seed gives another puzzle every time."""


class UnseededVaultEnv:
    def reset(self, seed=None):
        self.code = random.randint(100, 999)
        self.turn = 0
        return "Crack the 3-digit code with \\boxed{NNN}; I say how many digits are right.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(\d{3})\s*\}", action)
        if not m:
            return "Three digits, please.", 0.0, False, self.turn >= 15, {}
        right = sum(a == b for a, b in zip(m[-1], str(self.code)))
        if right == 3:
            return "Open!", 1.0, True, False, {}
        return f"{right} digit(s) right.", 0.0, False, self.turn >= 15, {}

    def solution(self):
        return ["\\boxed{%d}" % self.code]
