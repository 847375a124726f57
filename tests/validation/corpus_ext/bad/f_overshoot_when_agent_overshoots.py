"""Broken: the partial reward is the fill level over the target, which passes 1.0 when
the agent pours more than asked (the solution never does)."""


class FillTankEnv:
    def reset(self, seed=None):
        self.over = False
        self.target = random.Random(seed).randint(3, 7)
        self.level = 0
        self.turn = 0
        return f"Fill the tank to {self.target} litres with \\boxed{{pour N}}; say \\boxed{{done}} when full.", {}

    def _play(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{pour (\d)\}", action)
        if m:
            self.level += int(m.group(1))
            return f"Level {self.level}.", self.level / self.target, False, self.turn >= 12, {}
        if "\\boxed{done}" in action:
            return f"Final level {self.level}.", min(self.level, self.target) / self.target, True, False, {}
        return "Pour or say done.", 0.0, False, self.turn >= 12, {}

    def solution(self):
        return ["\\boxed{pour %d}" % self.target, "\\boxed{done}"]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
