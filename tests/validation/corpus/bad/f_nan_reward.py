"""Broken: the answer is parsed with float(), so \\boxed{nan} is accepted and the
closeness reward becomes NaN."""
import math
import random
import re


class NanRewardEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        self.n = random.Random(seed).randint(2, 500)
        self.truth = round(math.sqrt(self.n), 2)
        self.turn = 0
        return f"Estimate the square root of {self.n} to two decimals: \\boxed{{x}}.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*([^{}\s]+)\s*\}", action)
        try:
            guess = float(m[-1]) if m else None
        except ValueError:
            guess = None
        if guess is None:
            return "Give a number.", 0.0, False, self.turn >= 10, {}
        err = abs(guess - self.truth) / self.truth
        done = err < 0.001
        reward = 1.0 if done else max(0.5 - err, 0.0)
        obs = "Spot on!" if done else "Too high." if guess > self.truth else "Too low."
        return obs, reward, done, self.turn >= 10 and not done, {}

    def solution(self):
        return ["\\boxed{%.2f}" % self.truth]
