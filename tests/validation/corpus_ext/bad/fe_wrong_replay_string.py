"""Broken: the reference-style string solution lists the right commands in the wrong
order, so replaying it does not open the safe."""


class SafeDialEnv:
    def reset(self, seed=None):
        rng = random.Random(seed)
        self.combo = rng.sample(["red", "green", "blue", "gold"], 3)
        self.entered = []
        self.turn = 0
        return "Press three colour buttons in the right order with \\boxed{COLOUR} (red, green, blue, gold).", {}

    def step(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{\s*(red|green|blue|gold)\s*\}", action)
        if not m:
            return "Press a colour.", 0.0, False, self.turn >= 15, {}
        self.entered.append(m.group(1))
        if self.entered != self.combo[: len(self.entered)]:
            self.entered = []
            return "Buzz. Start again.", 0.0, False, self.turn >= 15, {}
        if len(self.entered) == 3:
            return "The safe opens.", 1.0, True, False, {}
        return f"{len(self.entered)} right so far.", 0.0, False, self.turn >= 15, {}

    def solution(self):
        return " ".join("\\boxed{%s}" % c for c in reversed(self.combo))
