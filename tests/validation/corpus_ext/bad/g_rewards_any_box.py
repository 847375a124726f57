"""Broken: any boxed text counts as a correct answer (the check only looks for a box)."""


class AnyBoxEnv:
    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.word = rng.choice(["apple", "river", "stone", "cloud"])
        self.turn = 0
        return f"Unscramble '{''.join(sorted(self.word))}' and reply \\boxed{{WORD}}.", {}

    def _play(self, action):
        self.turn += 1
        if re.search(r"\\boxed\{(.+?)\}", action):
            return "Accepted!", 1.0, True, False, {}
        return "Reply with a boxed word.", 0.0, False, self.turn >= 10, {}

    def solution(self):
        return ["\\boxed{%s}" % self.word]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
