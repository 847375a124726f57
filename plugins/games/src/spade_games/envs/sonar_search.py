"""Sonar search: locate two buoys on an 8x8 grid from distance pings, then recover them."""

import random
import re

_BOX = re.compile(r"\\boxed\{([^{}]*)\}")
_INT = re.compile(r"^\d+$")


def _command(action):
    """Payload of the last \\boxed{...} in the action, whitespace-normalised; None if absent."""
    if not isinstance(action, str):
        return None
    found = _BOX.findall(action)
    if not found:
        return None
    return " ".join(found[-1].replace(",", " ").strip().split())


class SonarSearchEnv:
    """Two hidden buoys; a ping reports the Manhattan distance to the nearest one not yet recovered."""

    SIZE = 8
    # what an edit may change (spade_designer.knobs): the grid's side
    KNOBS = {"SIZE": (int, 6, 12)}
    HARDER = {"SIZE": "higher"}

    @property
    def GRAMMAR(self):
        return (
            "Commands: \\boxed{ping X Y} reports the grid distance |dx| + |dy| from cell (X, Y) to the "
            "nearest buoy still missing; \\boxed{dive X Y} recovers a buoy if one is at (X, Y). X and Y are 0-%d."
            % (self.SIZE - 1)
        )

    def __init__(self, max_turns=20):
        self.max_turns = max_turns
        self.buoys = []
        self.found = []
        self.turn = 0
        self.done = False

    def reset(self, seed=None):
        rng = random.Random(seed)
        cells = [(x, y) for x in range(self.SIZE) for y in range(self.SIZE)]
        self.buoys = rng.sample(cells, 2)
        self.found = []
        self.turn = 0
        self.done = False
        obs = "Two buoys sank somewhere on an %dx%d grid of cells (X, Y), 0 <= X, Y <= %d. %s You have %d turns." % (
            self.SIZE, self.SIZE, self.SIZE - 1, self.GRAMMAR, self.max_turns)
        return obs, {"turn": 0}

    def _progress(self):
        return round(0.45 * len(self.found), 4)

    def _cell(self, parts):
        if len(parts) != 3 or not _INT.match(parts[1]) or not _INT.match(parts[2]):
            return None
        x, y = int(parts[1]), int(parts[2])
        if x >= self.SIZE or y >= self.SIZE:
            return None
        return (x, y)

    def _act(self, cmd):
        if cmd is None:
            return "Invalid action: wrap one command in \\boxed{...}. " + self.GRAMMAR, self._progress(), False
        parts = cmd.lower().split()
        verb = parts[0] if parts else ""
        if verb in ("ping", "dive"):
            cell = self._cell(parts)
            if cell is None:
                return "Invalid cell: use two integers 0-%d, e.g. \\boxed{%s 3 5}." % (self.SIZE - 1, verb), self._progress(), False
            missing = [b for b in self.buoys if b not in self.found]
            if verb == "ping":
                d = min(abs(cell[0] - b[0]) + abs(cell[1] - b[1]) for b in missing)
                return "Ping at (%d, %d): nearest missing buoy is %d steps away." % (cell[0], cell[1], d), self._progress(), False
            if cell in missing:
                self.found.append(cell)
                if len(self.found) == len(self.buoys):
                    return "You recovered the last buoy at (%d, %d)!" % cell, 1.0, True
                return "You recovered a buoy at (%d, %d)! One more to go." % cell, self._progress(), False
            if cell in self.found:
                return "You already recovered the buoy at (%d, %d)." % cell, self._progress(), False
            return "Nothing at (%d, %d)." % cell, self._progress(), False
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
        return ["\\boxed{dive %d %d}" % buoy for buoy in self.buoys]

    def close(self):
        pass
