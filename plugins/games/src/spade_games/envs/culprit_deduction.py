"""Culprit deduction: make suggestions, learn one wrong element each time, then accuse."""

import random
import re

_BOX = re.compile(r"\\boxed\{([^{}]*)\}")

# A game uses the first OPTIONS names of each list.
SUSPECTS = ("Amber", "Basil", "Coral", "Dorian", "Elodie", "Felix")
TOOLS = ("rope", "wrench", "candlestick", "pipe", "dagger", "lantern")
ROOMS = ("library", "kitchen", "cellar", "study", "garden", "attic")


def _command(action):
    """Payload of the last \\boxed{...} in the action, whitespace-normalised; None if absent."""
    if not isinstance(action, str):
        return None
    found = _BOX.findall(action)
    if not found:
        return None
    return " ".join(found[-1].replace(",", " ").strip().split())


class CulpritDeductionEnv:
    """A hidden (suspect, tool, room) triple; each suggestion is refuted by one wrong element.

    Which wrong element a witness reveals is chosen by the game's seeded generator, so a
    suggestion with several wrong parts reveals only one of them; the accusation is final.
    """

    OPTIONS = 4
    # what an edit may change (spade_designer.knobs): how many suspects, tools and rooms there are
    KNOBS = {"OPTIONS": (int, 3, 6)}
    HARDER = {"OPTIONS": "higher"}

    @property
    def CATEGORIES(self):
        """The suspects, tools and rooms of this game."""
        return SUSPECTS[: self.OPTIONS], TOOLS[: self.OPTIONS], ROOMS[: self.OPTIONS]

    @property
    def GRAMMAR(self):
        return (
            "Commands: \\boxed{suggest SUSPECT TOOL ROOM} (a witness refutes one wrong part, if any); "
            "\\boxed{accuse SUSPECT TOOL ROOM} (final). Suspects: %s. Tools: %s. Rooms: %s."
            % tuple(", ".join(names) for names in self.CATEGORIES)
        )

    def __init__(self, max_turns=14):
        self.max_turns = max_turns
        self.truth = (SUSPECTS[0], TOOLS[0], ROOMS[0])
        self.rng = random.Random(0)
        self.cleared = set()
        self.turn = 0
        self.done = False

    def reset(self, seed=None):
        self.rng = random.Random(seed)
        self.truth = tuple(self.rng.choice(names) for names in self.CATEGORIES)
        self.cleared = set()
        self.turn = 0
        self.done = False
        obs = (
            "A crime was committed by one suspect, with one tool, in one room. Find all three. %s "
            "You have %d turns." % (self.GRAMMAR, self.max_turns)
        )
        return obs, {"turn": 0}

    def _parse(self, words):
        """The (suspect, tool, room) named by three words, matched case-insensitively; None if invalid."""
        if len(words) != 3:
            return None
        picked = []
        for word, options in zip(words, self.CATEGORIES):
            match = [o for o in options if o.lower() == word.lower()]
            if not match:
                return None
            picked.append(match[0])
        return tuple(picked)

    def _progress(self):
        # OPTIONS - 1 wrong elements per category; each one cleared is progress.
        return round(0.5 * len(self.cleared) / (3 * (self.OPTIONS - 1)), 4)

    def _act(self, cmd):
        if cmd is None:
            return "Invalid action: wrap one command in \\boxed{...}. " + self.GRAMMAR, self._progress(), False
        parts = cmd.split()
        verb = parts[0].lower() if parts else ""
        if verb in ("suggest", "accuse"):
            triple = self._parse(parts[1:])
            if triple is None:
                return "Invalid %s: name one suspect, one tool and one room, in that order." % verb, self._progress(), False
            wrong = [item for item, true in zip(triple, self.truth) if item != true]
            if verb == "accuse":
                if not wrong:
                    return "Case closed: %s with the %s in the %s." % self.truth, 1.0, True
                return "Wrong accusation. It was %s with the %s in the %s." % self.truth, round(0.3 * (3 - len(wrong)) / 3, 4), True
            if not wrong:
                return "No witness can refute %s with the %s in the %s." % triple, self._progress(), False
            shown = self.rng.choice(wrong)
            self.cleared.add(shown)
            return "A witness proves it was not the %s." % shown if shown in TOOLS else (
                "A witness proves it was not %s." % shown if shown in SUSPECTS else
                "A witness proves it did not happen in the %s." % shown), self._progress(), False
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
        return ["\\boxed{accuse %s %s %s}" % self.truth]

    def close(self):
        pass
