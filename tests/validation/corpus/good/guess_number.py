"""Guess a hidden number between 1 and 100; each wrong guess says higher or lower."""
import random
import re


class GuessNumberEnv:
    def __init__(self, max_turns=12):
        self.max_turns = max_turns
        self.secret = 0
        self.turn = 0
        self.done = False

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.secret = rng.randint(1, 100)
        self.turn = 0
        self.done = False
        return "I picked a number from 1 to 100. Guess it with \\boxed{N}.", {"max_turns": self.max_turns}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {}
        self.turn += 1
        found = re.findall(r"\\boxed\{\s*(-?\d+)\s*\}", action)
        reward, terminated = 0.0, False
        if not found:
            obs = "Please answer with a number in \\boxed{N}."
        else:
            guess = int(found[-1])
            if guess == self.secret:
                obs, reward, terminated = "Correct!", 1.0, True
            elif guess < self.secret:
                obs = f"{guess} is too low."
            else:
                obs = f"{guess} is too high."
        truncated = not terminated and self.turn >= self.max_turns
        self.done = terminated or truncated
        return obs, reward, terminated, truncated, {"turn": self.turn}

    def solution(self):
        return ["\\boxed{%d}" % self.secret]
