import random
import re

_BOX = re.compile(r"\\boxed\{([^{}]*)\}")


class LanternCodeEnv:
    """Find the hidden lantern code (a number from 10 to 99) with higher/lower feedback."""

    def __init__(self, max_turns=12):
        self.max_turns = max_turns
        self.secret = 10
        self.turn = 0
        self.done = False

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.secret = rng.randint(10, 99)
        self.turn = 0
        self.done = False
        return "A lantern hides a code from 10 to 99. Command: \\boxed{guess N}.", {"turn": 0}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {}
        self.turn += 1
        found = _BOX.findall(action) if isinstance(action, str) else []
        parts = found[-1].split() if found else []
        if len(parts) == 2 and parts[0] == "guess" and parts[1].isdecimal():
            n = int(parts[1])
            if n == self.secret:
                self.done = True
                return "The lantern lights up!", 1.0, True, False, {"turn": self.turn}
            obs = "Higher." if n < self.secret else "Lower."
        else:
            obs = "Invalid command. Use \\boxed{guess N}."
        truncated = self.turn >= self.max_turns
        self.done = truncated
        return obs, 0.0, False, truncated, {"turn": self.turn}

    def solution(self):
        return ["\\boxed{guess " + str(self.secret) + "}"]

    def close(self):
        pass
