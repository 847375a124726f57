"""Sound, reference style: a three-dial lock; ``solution()`` returns the reference's
string of boxed commands, and the dials live in a ``deque`` used without an import."""


class ComboLockEnv:
    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.code = [rng.randint(0, 9) for _ in range(3)]
        self.entered = deque(maxlen=3)
        self.turn = 0
        return ("A lock with three dials (0-9). Set the next dial with \\boxed{D}. "
                "After each dial you hear whether it clicked."), {}

    def _play(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{\s*(\d)\s*\}", action)
        if not m:
            return "The dial did not move. Use \\boxed{D}.", 0.0, False, self.turn >= 20, {}
        digit = int(m.group(1))
        pos = len(self.entered)
        if digit != self.code[pos]:
            self.entered.clear()
            return f"Dial {pos + 1} set to {digit}: no click. The lock resets.", 0.0, False, self.turn >= 20, {}
        self.entered.append(digit)
        if len(self.entered) == 3:
            return "Click, click, click: the lock opens!", 1.0, True, False, {}
        return f"Dial {pos + 1} set to {digit}: click.", len(self.entered) / 3.0 * 0.5, False, self.turn >= 20, {}

    def solution(self):
        return " ".join("\\boxed{%d}" % d for d in self.code)

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
