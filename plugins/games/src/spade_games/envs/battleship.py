"""Battleship: sink three hidden ships on a 6x6 sea by firing at cells."""

import random
import re

_BOX = re.compile(r"\\boxed\{([^{}]*)\}")
_CELL = re.compile(r"^([a-z])([1-9][0-9]?)$")


def _command(action):
    """Payload of the last \\boxed{...} in the action, whitespace-normalised; None if absent."""
    if not isinstance(action, str):
        return None
    found = _BOX.findall(action)
    if not found:
        return None
    return " ".join(found[-1].strip().split())


class BattleshipEnv:
    """Ships of lengths 3, 2 and 2 lie straight, without overlapping, on columns A-F x rows 1-6."""

    SIZE = 6
    SHIPS = (3, 2, 2)
    # what an edit may change (spade_designer.knobs): the sea's side
    KNOBS = {"SIZE": (int, 5, 9)}
    HARDER = {"SIZE": "higher"}

    @property
    def COLS(self):
        return "ABCDEFGHI"[: self.SIZE]

    @property
    def GRAMMAR(self):
        return "Command: \\boxed{fire C4} fires at column C (A-%s), row 4 (1-%d)." % (self.COLS[-1], self.SIZE)

    def __init__(self, max_turns=25):
        self.max_turns = max_turns
        self.ships = []
        self.shots = {}
        self.turn = 0
        self.done = False

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.ships = []
        taken = set()
        for length in self.SHIPS:
            while True:
                horizontal = rng.random() < 0.5
                r = rng.randrange(self.SIZE if horizontal else self.SIZE - length + 1)
                c = rng.randrange(self.SIZE - length + 1 if horizontal else self.SIZE)
                cells = [(r, c + i) if horizontal else (r + i, c) for i in range(length)]
                if not taken.intersection(cells):
                    taken.update(cells)
                    self.ships.append(cells)
                    break
        self.shots = {}
        self.turn = 0
        self.done = False
        obs = (
            "Three enemy ships (lengths 3, 2, 2) hide on a %dx%d sea, each lying straight, horizontally "
            "or vertically, without overlapping. Sink them all. %s You have %d turns.\n%s"
            % (self.SIZE, self.SIZE, self.GRAMMAR, self.max_turns, self._board())
        )
        return obs, {"turn": 0}

    def _board(self):
        rows = ["  " + " ".join(self.COLS)]
        for r in range(self.SIZE):
            marks = [self.shots.get((r, c), ".") for c in range(self.SIZE)]
            rows.append("%d %s" % (r + 1, " ".join(marks)))
        return "\n".join(rows) + "\n(X = hit, o = miss, . = unknown)"

    def _hits(self):
        return sum(1 for ship in self.ships for cell in ship if self.shots.get(cell) == "X")

    def _progress(self):
        return round(0.9 * self._hits() / sum(self.SHIPS), 4)

    def _act(self, cmd):
        if cmd is None:
            return "Invalid action: wrap one command in \\boxed{...}. " + self.GRAMMAR, self._progress(), False
        parts = cmd.lower().split()
        if len(parts) == 2 and parts[0] == "fire":
            m = _CELL.match(parts[1])
            if not m or m.group(1).upper() not in self.COLS or int(m.group(2)) > self.SIZE:
                return "Invalid target %r: use a column A-%s and a row 1-%d, e.g. B5." % (
                    parts[1][:20], self.COLS[-1], self.SIZE), self._progress(), False
            cell = (int(m.group(2)) - 1, self.COLS.index(m.group(1).upper()))
            name = parts[1].upper()
            if cell in self.shots:
                return "You already fired at %s.\n%s" % (name, self._board()), self._progress(), False
            ship = next((s for s in self.ships if cell in s), None)
            if ship is None:
                self.shots[cell] = "o"
                return "%s: miss.\n%s" % (name, self._board()), self._progress(), False
            self.shots[cell] = "X"
            if self._hits() == sum(self.SHIPS):
                return "%s: hit. All ships sunk!" % name, 1.0, True
            sunk = all(self.shots.get(c) == "X" for c in ship)
            news = "hit and sunk a ship of length %d" % len(ship) if sunk else "hit"
            return "%s: %s.\n%s" % (name, news, self._board()), self._progress(), False
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
        return ["\\boxed{fire %s%d}" % (self.COLS[c], r + 1) for ship in self.ships for r, c in ship]

    def close(self):
        pass
