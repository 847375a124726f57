"""Broken: every action gets the same acknowledgement; progress shows only in the
reward, which the agent never reads."""


class SilentSorterEnv:
    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.order = rng.sample(["ant", "bee", "cat", "dog"], 4)
        self.placed = 0
        self.turn = 0
        return f"Put the animals {', '.join(sorted(self.order))} in the secret order, one \\boxed{{NAME}} at a time.", {}

    def _play(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{\s*([a-z]+)\s*\}", action)
        if m and self.placed < 4 and m.group(1) == self.order[self.placed]:
            self.placed += 1
        done = self.placed == 4
        return "Noted.", 1.0 if done else 0.2 * self.placed, done, self.turn >= 16 and not done, {}

    def solution(self):
        return ["\\boxed{%s}" % a for a in self.order]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
