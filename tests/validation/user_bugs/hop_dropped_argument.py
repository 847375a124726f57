"""A frog hops along stones to the far bank; `hop` without its length crashes.

The bug, as users write it: the argument is read as `parts[1]` before anyone checks that
there is one, so `\\boxed{hop}` raises IndexError. The same game with the check in place
is the control (see FIXED in the tests).
"""
import random


class FrogHopEnv:
    def __init__(self):
        self.max_turns = 12

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.bank = rng.randint(5, 8)
        self.pos = 0
        self.turn = 0
        intro = (
            f"Stones are numbered 0 to {self.bank}; you stand on 0 and the far bank is stone {self.bank}. "
            "Hop forward 1 to 4 stones with \\boxed{hop K}. Landing exactly on the bank wins."
        )
        return intro, {}

    def _play(self, action):
        self.turn += 1
        start = action.rfind("\\boxed{")
        end = action.find("}", start)
        cmd = action[start + 7:end].strip().lower() if start != -1 and end != -1 else ""
        parts = cmd.split()
        if not parts or parts[0] != "hop":
            return self._reply("Unknown command: use \\boxed{hop K}.")
        k = parts[1]  # BUG: no check that the length was given
        if not (len(k) == 1 and k in "1234"):
            return self._reply("Hop 1 to 4 stones.")
        if self.pos + int(k) > self.bank:
            return self._reply("That hop would overshoot the bank; hop shorter.")
        self.pos += int(k)
        if self.pos == self.bank:
            return "You reached the bank!", 1.0, True, False, {}
        return self._reply(f"You are on stone {self.pos}.")

    def _reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def solution(self):
        left = self.bank - self.pos
        return ["\\boxed{hop %d}" % min(4, left - i * 4) for i in range((left + 3) // 4)]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
