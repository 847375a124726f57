"""Broken: every action gets the same reply, so the agent learns nothing from playing;
only the hidden code pays."""
import random
import re


class NotInteractiveEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        self.over = False
        self.code = "".join(random.Random(seed).choice("ABCD") for _ in range(4))
        self.turn = 0
        return "Enter the 4-letter access code (letters A-D) with \\boxed{CODE}.", {}

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*([A-D]{4})\s*\}", action)
        ok = bool(m) and m[-1] == self.code
        return "Input recorded.", float(ok), ok, self.turn >= 12 and not ok, {}

    def solution(self):
        return ["\\boxed{%s}" % self.code]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
