"""Sound: the episode ends on any malformed action (a strict terminal), yet several
well-formed ``push`` moves make a game; the reference-style string solution shows them.
Probes that are all malformed here must not read as single-shot."""


class StrictPusherEnv:
    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.target = [rng.randint(1, 3) for _ in range(3)]
        self.level = [0, 0, 0]
        self.turn = 0
        return (f"Three columns at heights {self.level}; make them {self.target}. "
                "Only \\boxed{push N} (N = 1, 2 or 3) is understood; anything else ends the game."), {}

    def _play(self, action):
        self.turn += 1
        m = re.fullmatch(r"\s*\\boxed\{push ([123])\}\s*", action)
        if not m:
            return "Unknown command: the game is over.", 0.0, True, False, {}
        col = int(m.group(1)) - 1
        self.level[col] += 1
        if self.level[col] > self.target[col]:
            return f"Column {col + 1} is too high: {self.level}. Game over.", 0.0, True, False, {}
        if self.level == self.target:
            return f"Heights {self.level}: done!", 1.0, True, False, {}
        return f"Heights {self.level}.", 0.0, False, self.turn >= 12, {}

    def solution(self):
        return "\n".join("\\boxed{push %d}" % (c + 1) for c in range(3) for _ in range(self.target[c]))

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
