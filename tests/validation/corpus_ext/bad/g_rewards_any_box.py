"""Broken: any boxed text counts as a correct answer (the check only looks for a box)."""


class AnyBoxEnv:
    def reset(self, seed=None):
        rng = random.Random(seed)
        self.word = rng.choice(["apple", "river", "stone", "cloud"])
        self.turn = 0
        return f"Unscramble '{''.join(sorted(self.word))}' and reply \\boxed{{WORD}}.", {}

    def step(self, action):
        self.turn += 1
        if re.search(r"\\boxed\{(.+?)\}", action):
            return "Accepted!", 1.0, True, False, {}
        return "Reply with a boxed word.", 0.0, False, self.turn >= 10, {}

    def solution(self):
        return ["\\boxed{%s}" % self.word]
