"""Broken: the observation is the same text whatever the agent does (only the hidden
reward moves); the reference-style string solution shows which commands matter."""


class BlindLockEnv:
    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.code = [rng.choice("NESW") for _ in range(3)]
        self.progress = 0
        self.turn = 0
        self.intro = "Turn the dial with \\boxed{N}, \\boxed{E}, \\boxed{S} or \\boxed{W}. Three turns open it."
        return self.intro, {}

    def _play(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{\s*([NESW])\s*\}", action)
        if m and m.group(1) == self.code[self.progress]:
            self.progress += 1
        else:
            self.progress = 0
        done = self.progress == 3
        return self.intro, 1.0 if done else self.progress / 6, done, self.turn >= 15 and not done, {}

    def solution(self):
        return " ".join("\\boxed{%s}" % c for c in self.code)

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
