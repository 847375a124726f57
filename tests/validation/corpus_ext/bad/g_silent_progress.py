"""Broken: every action gets the same acknowledgement; progress shows only in the
reward, which the agent never reads."""


class SilentSorterEnv:
    def reset(self, seed=None):
        rng = random.Random(seed)
        self.order = rng.sample(["ant", "bee", "cat", "dog"], 4)
        self.placed = 0
        self.turn = 0
        return f"Put the animals {', '.join(sorted(self.order))} in the secret order, one \\boxed{{NAME}} at a time.", {}

    def step(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{\s*([a-z]+)\s*\}", action)
        if m and self.placed < 4 and m.group(1) == self.order[self.placed]:
            self.placed += 1
        done = self.placed == 4
        return "Noted.", 1.0 if done else 0.2 * self.placed, done, self.turn >= 16 and not done, {}

    def solution(self):
        return ["\\boxed{%s}" % a for a in self.order]
