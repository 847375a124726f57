"""Broken: ``reset()`` returns the list of legal moves where the info dict belongs."""


class MovesListEnv:
    def reset(self, seed=None):
        self.pile = random.Random(seed).randint(4, 9)
        return f"{self.pile} matches. Take 1 or 2 with \\boxed{{N}}; take the last one to win.", ["1", "2"]

    def step(self, action):
        m = re.findall(r"\\boxed\{\s*([12])\s*\}", action)
        if not m:
            return "Take 1 or 2.", 0.0, False, False, {}
        self.pile -= min(int(m[-1]), self.pile)
        if self.pile == 0:
            return "You took the last match.", 1.0, True, False, {}
        return f"{self.pile} left.", 0.0, False, False, {}

    def solution(self):
        return ["\\boxed{1}"] * self.pile
