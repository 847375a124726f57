"""Near-duplicate of good/guess_number.py: renamed, reworded, different range."""
import random
import re


class PickANumberEnv:
    def __init__(self, limit=12):
        self.limit = limit
        self.hidden = 0
        self.t = 0
        self.over = False

    def reset(self, seed=None):
        gen = random.Random(seed)
        self.hidden = gen.randint(1, 200)
        self.t = 0
        self.over = False
        return "Think of a number from 1 to 200 and guess it: \\boxed{N}.", {"max_turns": self.limit}

    def step(self, action):
        if self.over:
            return "Finished.", 0.0, True, False, {}
        self.t += 1
        hits = re.findall(r"\\boxed\{\s*(-?\d+)\s*\}", action)
        reward, terminated = 0.0, False
        if not hits:
            obs = "Reply with a number in \\boxed{N}."
        else:
            g = int(hits[-1])
            if g == self.hidden:
                obs, reward, terminated = "Right!", 1.0, True
            elif g < self.hidden:
                obs = f"{g} is too small."
            else:
                obs = f"{g} is too big."
        truncated = not terminated and self.t >= self.limit
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, {"turn": self.t}

    def solution(self):
        return ["\\boxed{%d}" % self.hidden]
