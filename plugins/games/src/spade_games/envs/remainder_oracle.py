"""Remainder oracle: recover a hidden number from its remainders (Chinese remainder reasoning)."""

import math
import random
import re

_BOX = re.compile(r"\\boxed\{([^{}]*)\}")
_INT = re.compile(r"^[+-]?\d+$")


def _command(action):
    """Payload of the last \\boxed{...} in the action, whitespace-normalised; None if absent."""
    if not isinstance(action, str):
        return None
    found = _BOX.findall(action)
    if not found:
        return None
    return " ".join(found[-1].strip().split())


class RemainderOracleEnv:
    """A secret N in [1, 2000]; the agent may ask N mod K three times (K in [2, 20]), then guess N.

    Any two moduli in [2, 20] have a least common multiple below 2000, so a single pair of
    remainders never pins N down: three well-chosen moduli (pairwise coprime) are needed.
    """

    LIMIT = 2000
    MAX_MODS = 3
    MAX_GUESSES = 3
    # what an edit may change (spade_designer.knobs): the range of N and the question budgets
    KNOBS = {"LIMIT": (int, 200, 5000), "MAX_MODS": (int, 2, 5), "MAX_GUESSES": (int, 1, 5)}
    HARDER = {"LIMIT": "higher", "MAX_MODS": "lower", "MAX_GUESSES": "lower"}
    GRAMMAR = (
        "Commands: \\boxed{mod K} reveals the remainder of N divided by K, for an integer K in [2, 20]; "
        "\\boxed{guess N} names the secret number."
    )

    def __init__(self, max_turns=10, max_mods=None, max_guesses=None):
        self.max_turns = max_turns
        self.max_mods = self.MAX_MODS if max_mods is None else max_mods
        self.max_guesses = self.MAX_GUESSES if max_guesses is None else max_guesses
        self.secret = 1
        self.turn = 0
        self.moduli = []
        self.guesses = 0
        self.done = False

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.secret = rng.randint(1, self.LIMIT)
        self.turn = 0
        self.moduli = []
        self.guesses = 0
        self.done = False
        obs = (
            "I am thinking of a secret whole number N with 1 <= N <= %d. You may ask for its remainder "
            "modulo K at most %d times, and guess at most %d times. %s You have %d turns."
            % (self.LIMIT, self.max_mods, self.max_guesses, self.GRAMMAR, self.max_turns)
        )
        return obs, {"turn": 0}

    def _progress(self):
        """Share of the candidate range ruled out so far, on a log scale, scaled to 0.3."""
        lcm = 1
        for k in self.moduli:
            lcm = lcm * k // math.gcd(lcm, k)
        return round(0.3 * min(1.0, math.log(lcm) / math.log(self.LIMIT)), 4)

    def _act(self, cmd):
        if cmd is None:
            return "Invalid action: wrap one command in \\boxed{...}. " + self.GRAMMAR, 0.0, False
        parts = cmd.lower().split()
        if len(parts) == 2 and parts[0] == "mod":
            if not _INT.match(parts[1]) or not 2 <= int(parts[1]) <= 20:
                return "Invalid modulus: K must be an integer in [2, 20].", self._progress(), False
            if len(self.moduli) >= self.max_mods:
                return "No remainder questions left; make a guess.", self._progress(), False
            k = int(parts[1])
            self.moduli.append(k)
            left = self.max_mods - len(self.moduli)
            return "N mod %d = %d. (%d remainder questions left)" % (k, self.secret % k, left), self._progress(), False
        if len(parts) == 2 and parts[0] == "guess":
            if not _INT.match(parts[1]):
                return "Invalid guess: give a whole number, e.g. \\boxed{guess 417}.", self._progress(), False
            self.guesses += 1
            if int(parts[1]) == self.secret:
                return "Correct! N = %d." % self.secret, 1.0, True
            if self.guesses >= self.max_guesses:
                return "Wrong, and no guesses left. N was %d." % self.secret, self._progress(), True
            return "Wrong guess. %d guesses left." % (self.max_guesses - self.guesses), self._progress(), False
        return "Unknown command %r. %s" % (cmd[:60], self.GRAMMAR), self._progress(), False

    def step(self, action):
        if self.done:
            return "The episode is over; call reset().", 0.0, True, False, {"error": "episode_over"}
        self.turn += 1
        obs, reward, terminated = self._act(_command(action))
        truncated = False
        if not terminated and self.turn >= self.max_turns:
            truncated = True
            obs += " Out of turns."
        self.done = terminated or truncated
        return obs, reward, terminated, truncated, {"turn": self.turn}

    def solution(self):
        """The shortest winning replay from reset(seed); it reads the hidden state."""
        return ["\\boxed{guess %d}" % self.secret]

    def close(self):
        pass
