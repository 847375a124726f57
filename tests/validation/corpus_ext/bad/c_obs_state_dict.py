"""Broken, a habit from array environments: ``step()`` returns the state dict as the
observation instead of text."""


class StateDictEnv:
    def reset(self, seed=None):
        self.state = {"pos": 0, "goal": random.Random(seed).randint(2, 5)}
        return f"Walk to {self.state['goal']} with \\boxed{{step}}.", {}

    def step(self, action):
        if "\\boxed{step}" in action:
            self.state["pos"] += 1
        ok = self.state["pos"] == self.state["goal"]
        return dict(self.state), float(ok), ok, self.state["pos"] > 8, {}

    def solution(self):
        return ["\\boxed{step}"] * self.state["goal"]
