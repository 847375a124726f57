"""Broken: the 'status' command returns the turn counter (an int) as the observation."""
import random
import re


class WrongTypeOnStatusEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, 50)
        self.turn = 0
        return "Guess 1-50 with \\boxed{N}, or ask \\boxed{status}.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(\w+)\s*\}", action)
        cmd = m[-1] if m else ""
        if cmd == "status":
            return self.turn, 0.0, False, self.turn >= 10, {}
        if not cmd.isdigit():
            return "Give a number.", 0.0, False, self.turn >= 10, {}
        ok = int(cmd) == self.secret
        obs = "Correct!" if ok else "Higher." if int(cmd) < self.secret else "Lower."
        return obs, float(ok), ok, self.turn >= 10 and not ok, {}

    def solution(self):
        return ["\\boxed{%d}" % self.secret]
