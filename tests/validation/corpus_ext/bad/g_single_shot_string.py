"""Broken: a one-question quiz: any answer, right or wrong, ends the episode; the
reference-style string solution is the single boxed answer."""


class OneQuestionEnv:
    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.a, self.b = rng.randint(2, 12), rng.randint(2, 12)
        return f"What is {self.a} x {self.b}? Reply \\boxed{{N}}.", {}

    def _play(self, action):
        m = re.findall(r"\\boxed\{\s*(\d+)\s*\}", action)
        ok = bool(m) and int(m[-1]) == self.a * self.b
        return ("Right." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return "\\boxed{%d}" % (self.a * self.b)

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
