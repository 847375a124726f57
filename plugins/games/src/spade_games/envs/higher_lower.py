"""Higher or lower: find a secret among listed candidates, told after each miss which way to go.

The bottom rung of the games domain: a player that reads the list and halves it after
each miss wins every episode (``GUESSES`` guesses cover up to ``2**GUESSES - 1``
candidates), one that copies a random listed number wins often, and a constant answer
almost never, because the candidates change with every seed.
"""

import random
import re

_BOX = re.compile(r"\\boxed\{([^{}]*)\}")
_INT = re.compile(r"^[+-]?\d+$")


def _command(action):
    """Payload of the last \\boxed{...} in the action, stripped; None if absent."""
    if not isinstance(action, str):
        return None
    found = _BOX.findall(action)
    if not found:
        return None
    return found[-1].strip()


class HigherLowerEnv:
    """CANDIDATES distinct numbers from LOW..HIGH are listed; one is the secret; GUESSES tries."""

    CANDIDATES = 3
    GUESSES = 2
    LOW = 10
    HIGH = 99
    # what an edit may change (spade_designer.knobs): how many numbers are listed and how
    # many guesses the player has
    KNOBS = {"CANDIDATES": (int, 2, 15), "GUESSES": (int, 1, 4)}
    HARDER = {"CANDIDATES": "higher", "GUESSES": "lower"}

    def __init__(self, max_turns=4):
        self.max_turns = max_turns
        self.candidates = []
        self.secret = 0
        self.guesses = 0
        self.turn = 0
        self.done = False

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.candidates = sorted(rng.sample(range(self.LOW, self.HIGH + 1), self.CANDIDATES))
        self.secret = rng.choice(self.candidates)
        self.guesses = 0
        self.turn = 0
        self.done = False
        listed = ", ".join(str(c) for c in self.candidates)
        obs = (
            "I picked a secret number from this list: %s. Guess which one it is: reply with one "
            "number from the list in a box, for example %s. After a wrong guess I tell you whether "
            "the secret is higher or lower. You have %d guesses." % (listed, self._example(), self.GUESSES)
        )
        return obs, {"candidates": list(self.candidates)}

    def _example(self):
        return "\\boxed{%d}" % self.candidates[0]

    def _guess(self, cmd):
        if cmd is None or not _INT.match(cmd):
            return "Invalid guess: reply with one number from the list in a box, like %s." % self._example(), 0.0, False
        value = int(cmd)
        self.guesses += 1
        left = self.GUESSES - self.guesses
        if value == self.secret:
            return "Correct! The secret was %d." % self.secret, 1.0, True
        if left <= 0:
            return "Wrong, and no guesses left. The secret was %d." % self.secret, 0.0, True
        where = "%d is not in the list; " % value if value not in self.candidates else ""
        way = "higher" if self.secret > value else "lower"
        plural = "guess" if left == 1 else "guesses"
        return "Wrong: %sthe secret is %s than %d. %d %s left." % (where, way, value, left, plural), 0.0, False

    def step(self, action):
        if self.done:
            return "The episode is over; call reset().", 0.0, True, False, {"error": "episode_over"}
        self.turn += 1
        obs, reward, terminated = self._guess(_command(action))
        truncated = False
        if not terminated and self.turn >= self.max_turns:
            # invalid replies use no guess, but they use turns
            truncated = True
            obs += " Out of turns."
        self.done = terminated or truncated
        return obs, reward, terminated, truncated, {"guesses": self.guesses}

    def solution(self):
        return ["\\boxed{%d}" % self.secret]

    def close(self):
        pass
