"""Open a combination lock one dial at a time; a superscript digit crashes it.

The bug, as users write it: `str.isdigit()` says yes to '²' and '①', then `int()` raises
ValueError. The solution is a reference-style string of boxed commands.
"""
import random


class DialLockEnv:
    def __init__(self):
        self.max_turns = 20

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.code = [rng.randint(1, 9) for _ in range(3)]
        self.dial = 0
        self.turn = 0
        return (
            "A lock has 3 dials, each 1-9. Set the current dial with \\boxed{set D}; "
            "you hear a click when it is right, and then move on to the next dial."
        ), {}

    def _play(self, action):
        self.turn += 1
        start = action.rfind("\\boxed{")
        end = action.find("}", start)
        cmd = action[start + 7:end].strip() if start != -1 and end != -1 else ""
        parts = cmd.split()
        if len(parts) != 2 or parts[0] != "set" or not parts[1].isdigit():  # BUG: isdigit lets '²' through
            return "Use \\boxed{set D} with D from 1 to 9.", 0.0, False, self.turn >= self.max_turns, {}
        d = int(parts[1])
        if d == self.code[self.dial]:
            self.dial += 1
            if self.dial == 3:
                return "Click. The lock opens!", 1.0, True, False, {}
            return f"Click. Dial {self.dial + 1} now.", self.dial / 3, False, self.turn >= self.max_turns, {}
        return "Nothing happens.", self.dial / 3, False, self.turn >= self.max_turns, {}

    def solution(self):
        return "Set each dial in turn: " + ", then ".join("\\boxed{set %d}" % d for d in self.code[self.dial:])

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
