"""Broken: the turn limit is off by one and truncates every episode after one step."""
import random
import re


class TruncatesFirstStepEnv:
    def __init__(self):
        self.max_turns = 10
        self.turn = 0

    def reset(self, seed=None):
        self.over = False
        self.secret = random.Random(seed).randint(1, 50)
        self.turn = self.max_turns - 1
        return "Guess 1-50 with \\boxed{N}.", {}

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{(\d+)\}", action)
        ok = bool(m) and int(m[-1]) == self.secret
        return ("Correct!" if ok else "No."), float(ok), ok, self.turn >= self.max_turns and not ok, {}

    def solution(self):
        return ["\\boxed{%d}" % self.secret]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
