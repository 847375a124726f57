"""Broken: an exploration bonus for 'look' accumulates without limit, so repeating 'look'
reaches full reward without finding the treasure."""
import random
import re


class HackRepeatLookEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.treasure = rng.choice(["north", "south", "east", "west"])
        self.bonus = 0.0
        self.turn = 0
        return "The treasure lies north, south, east or west. \\boxed{look} around or \\boxed{dig DIR}.", {}

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{([^{}]*)\}", action)
        cmd = " ".join(m[-1].split()).lower() if m else ""
        if cmd == "look":
            self.bonus = min(1.0, self.bonus + 0.25)
            done = self.bonus >= 1.0
            hint = "The sand looks disturbed to the " + self.treasure + "." if self.turn > 2 else "Sand everywhere."
            return hint, self.bonus, done, self.turn >= 12 and not done, {}
        if cmd.startswith("dig "):
            ok = cmd[4:] == self.treasure
            return ("Treasure!" if ok else "Nothing here."), float(ok), ok, self.turn >= 12 and not ok, {}
        return "Unknown command.", 0.0, False, self.turn >= 12, {}

    def solution(self):
        return ["\\boxed{dig %s}" % self.treasure]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
