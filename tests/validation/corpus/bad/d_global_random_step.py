"""Broken: a gust of wind uses the module-level random generator, not the seeded one, so
the same seed and moves give different walks."""
import random
import re


class GlobalRandomStepEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.pos = 0
        self.goal = rng.randint(4, 8)
        self.turn = 0
        return f"Walk from 0 to {self.goal} with \\boxed{{left}} / \\boxed{{right}}. Watch the wind.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(left|right)\s*\}", action)
        if m:
            self.pos += 1 if m[-1] == "right" else -1
            if random.random() < 0.3:
                self.pos -= 1
        done = self.pos == self.goal
        return f"You are at {self.pos}.", float(done), done, self.turn >= 20 and not done, {}

    def solution(self):
        return ["\\boxed{right}"] * (self.goal - self.pos)
