"""Sound: a darts-like scoring game paying up to 10 points, declared with an annotated
class attribute ``reward_range: Tuple[float, float] = (0.0, 10.0)`` (typing names unimported)."""


class DartsEnv:
    reward_range: Tuple[float, float] = (0.0, 10.0)

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.bull = rng.randint(1, 20)
        self.darts = 3
        return f"Three darts. Throw at a sector 1-20 with \\boxed{{N}}; I tell you how far from the bull you were.", {}

    def _play(self, action):
        m = re.search(r"\\boxed\{\s*(\d{1,2})\s*\}", action)
        self.darts -= 1
        if not m or not 1 <= int(m.group(1)) <= 20:
            return "That dart missed the board.", 0.0, self.darts == 0, False, {}
        off = abs(int(m.group(1)) - self.bull)
        score = float(max(0, 10 - 2 * off))
        if off == 0:
            return "Bullseye! 10 points.", 10.0, True, False, {}
        if self.darts == 0:
            return f"Off by {off}: {score:g} points. No darts left.", score, True, False, {}
        return f"Off by {off}: {score:g} points.", score, False, False, {}

    def solution(self):
        return ["\\boxed{%d}" % self.bull]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
