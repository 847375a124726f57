"""Broken: ``solution()`` walks the wrong way (left where the exit is on the right)."""


class CorridorEnv:
    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.exit = rng.randint(2, 5)
        self.pos = 0
        self.turn = 0
        return f"A corridor of cells -5..5; you are at 0, the exit is at {self.exit}. \\boxed{{left}} or \\boxed{{right}}.", {}

    def _play(self, action):
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

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
