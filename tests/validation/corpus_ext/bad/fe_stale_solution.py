"""Broken: the solution is computed once in ``__init__`` (before any seed), not from the
puzzle ``reset(seed)`` drew."""


class StaleKeypadEnv:
    def __init__(self):
        self.reset(None)
        self.answer = ["\\boxed{%d}" % d for d in self.pin]

    def reset(self, seed=None):
        self.over = False
        self.pin = [random.Random(seed).randint(0, 9) for _ in range(1)] + [random.Random(None if seed is None else seed + 7).randint(0, 9)]
        self.typed = []
        self.turn = 0
        return "Type the 2-digit PIN one digit at a time with \\boxed{D}; a wrong digit clears it.", {}

    def _play(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{\s*(\d)\s*\}", action)
        if not m:
            return "Type a digit.", 0.0, False, self.turn >= 20, {}
        self.typed.append(int(m.group(1)))
        if self.typed != self.pin[: len(self.typed)]:
            self.typed = []
            return "Wrong digit; cleared.", 0.0, False, self.turn >= 20, {}
        if self.typed == self.pin:
            return "Unlocked.", 1.0, True, False, {}
        return "Digit accepted.", 0.0, False, self.turn >= 20, {}

    def solution(self):
        return list(self.answer)

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
