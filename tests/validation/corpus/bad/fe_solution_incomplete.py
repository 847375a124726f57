"""Broken: the reference solution forgets the final 'exit' and only reaches partial reward."""
import random
import re


class SolutionIncompleteEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        self.over = False
        self.key_room = random.Random(seed).choice(["cellar", "attic"])
        self.room = "hall"
        self.has_key = False
        self.turn = 0
        return "Find the key (cellar or attic), come back to the hall and exit. Commands: go X, take key, exit.", {}

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{([^{}]*)\}", action)
        cmd = " ".join(m[-1].split()).lower() if m else ""
        reward, done = (0.5 if self.has_key else 0.0), False
        if cmd in ("go cellar", "go attic", "go hall"):
            self.room = cmd[3:]
            obs = f"You are in the {self.room}."
        elif cmd == "take key" and self.room == self.key_room and not self.has_key:
            self.has_key, reward = True, 0.5
            obs = "Got the key."
        elif cmd == "exit" and self.room == "hall" and self.has_key:
            obs, reward, done = "You escape!", 1.0, True
        else:
            obs = "Nothing happens."
        return obs, reward, done, self.turn >= 15 and not done, {}

    def solution(self):
        return ["\\boxed{go %s}" % self.key_room, "\\boxed{take key}", "\\boxed{go hall}"]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
