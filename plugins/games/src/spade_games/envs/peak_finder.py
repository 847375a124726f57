"""Peak finder: locate the maximum of a hidden single-peaked function with few evaluations."""

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


class PeakFinderEnv:
    """f rises with one slope up to a hidden peak p in [0, 100] and falls with another slope after it."""

    LOW = 0
    HIGH = 100
    SLOPE = 6
    # what an edit may change (spade_designer.knobs): the domain's upper end and the steepest slope
    KNOBS = {"HIGH": (int, 40, 200), "SLOPE": (int, 1, 12)}
    HARDER = {"HIGH": "higher"}

    @property
    def GRAMMAR(self):
        return (
            "Commands: \\boxed{eval X} reveals f(X) for an integer X in [%d, %d]; "
            "\\boxed{submit X} names the peak (ends the game)." % (self.LOW, self.HIGH)
        )

    def __init__(self, max_turns=14):
        self.max_turns = max_turns
        self.peak = 50
        self.up = 1
        self.down = 1
        self.height = 1000
        self.floor = 0
        self.best_seen = 0
        self.turn = 0
        self.done = False

    def f(self, x):
        return self.height - (self.up * (self.peak - x) if x <= self.peak else self.down * (x - self.peak))

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.peak = rng.randint(self.LOW + 5, self.HIGH - 5)
        self.up, self.down = rng.randint(1, self.SLOPE), rng.randint(1, self.SLOPE)
        self.height = rng.randint(700, 999)
        self.floor = min(self.f(self.LOW), self.f(self.HIGH))
        self.best_seen = self.floor
        self.turn = 0
        self.done = False
        obs = (
            "A hidden function f on the integers %d..%d rises steadily up to a single peak and falls "
            "steadily after it (the two slopes may differ). Find the X where f is largest. %s You have %d turns."
            % (self.LOW, self.HIGH, self.GRAMMAR, self.max_turns)
        )
        return obs, {"turn": 0}

    def _share(self, value):
        return (value - self.floor) / (self.height - self.floor)

    def _act(self, cmd):
        progress = round(0.5 * self._share(self.best_seen), 4)
        if cmd is None:
            return "Invalid action: wrap one command in \\boxed{...}. " + self.GRAMMAR, progress, False
        parts = cmd.lower().split()
        if len(parts) == 2 and parts[0] in ("eval", "submit"):
            if not _INT.match(parts[1]) or not self.LOW <= int(parts[1]) <= self.HIGH:
                return "Invalid X: give an integer in [%d, %d]." % (self.LOW, self.HIGH), progress, False
            x = int(parts[1])
            if parts[0] == "eval":
                self.best_seen = max(self.best_seen, self.f(x))
                return "f(%d) = %d" % (x, self.f(x)), round(0.5 * self._share(self.best_seen), 4), False
            if x == self.peak:
                return "Exactly at the peak: f(%d) = %d." % (x, self.height), 1.0, True
            # Credit falls off within ten steps of the peak: a blind guess earns almost nothing.
            closeness = max(0.0, 1.0 - abs(x - self.peak) / 10)
            return "f(%d) = %d, but the peak was at %d with f = %d." % (
                x, self.f(x), self.peak, self.height), round(0.8 * closeness, 4), True
        return "Unknown command %r. %s" % (cmd[:60], self.GRAMMAR), progress, False

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
        return ["\\boxed{submit %d}" % self.peak]

    def close(self):
        pass
