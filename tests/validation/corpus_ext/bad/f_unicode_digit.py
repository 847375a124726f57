"""Broken: ``str.isdigit()`` accepts digit-like characters that ``int()`` refuses (a
superscript two, say), so such an action crashes ``step()`` with ValueError."""


class AbacusEnv:
    def reset(self, seed=None):
        self.target = random.Random(seed).randint(5, 30)
        self.total = 0
        self.turn = 0
        return f"Add numbers with \\boxed{{N}} until the total is exactly {self.target}.", {}

    def step(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{\s*(\S+)\s*\}", action)
        if not m or not m.group(1).isdigit():
            return f"Total {self.total}. Add a number.", 0.0, False, self.turn >= 15, {}
        self.total += int(m.group(1))
        if self.total == self.target:
            return f"Total {self.total}: exact!", 1.0, True, False, {}
        if self.total > self.target:
            return f"Total {self.total}: too much.", 0.0, True, False, {}
        return f"Total {self.total}.", 0.0, False, self.turn >= 15, {}

    def solution(self):
        return ["\\boxed{%d}" % (self.target - 4), "\\boxed{4}"]
