"""Broken: ``solution()`` walks the wrong way (left where the exit is on the right)."""


class CorridorEnv:
    def reset(self, seed=None):
        rng = random.Random(seed)
        self.exit = rng.randint(2, 5)
        self.pos = 0
        self.turn = 0
        return f"A corridor of cells -5..5; you are at 0, the exit is at {self.exit}. \\boxed{{left}} or \\boxed{{right}}.", {}

    def step(self, action):
        self.turn += 1
        if "\\boxed{left}" in action:
            self.pos = max(-5, self.pos - 1)
        elif "\\boxed{right}" in action:
            self.pos = min(5, self.pos + 1)
        if self.pos == self.exit:
            return "You found the exit.", 1.0, True, False, {}
        return f"You are at {self.pos}.", 0.0, False, self.turn >= 20, {}

    def solution(self):
        return ["\\boxed{left}"] * self.exit
