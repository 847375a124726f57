"""Height ranking: order six people by height using pairwise comparisons only."""

import random
import re

_BOX = re.compile(r"\\boxed\{([^{}]*)\}")


def _command(action):
    """Payload of the last \\boxed{...} in the action, whitespace-normalised; None if absent."""
    if not isinstance(action, str):
        return None
    found = _BOX.findall(action)
    if not found:
        return None
    return " ".join(found[-1].strip().split())


class HeightRankingEnv:
    """Six people with distinct hidden heights; comparisons reveal pairwise order only."""

    PEOPLE = ("Ava", "Ben", "Cleo", "Dev", "Eli", "Fay")
    MAX_ANSWERS = 2
    # what an edit may change (spade_designer.knobs): how many orders the player may submit
    KNOBS = {"MAX_ANSWERS": (int, 1, 4)}
    HARDER = {"MAX_ANSWERS": "lower"}
    GRAMMAR = (
        "Commands: \\boxed{compare NAME NAME} tells which of two people is taller; "
        "\\boxed{answer N1 N2 N3 N4 N5 N6} lists all six names from tallest to shortest."
    )

    def __init__(self, max_turns=16, max_answers=None):
        self.max_turns = max_turns
        self.max_answers = self.MAX_ANSWERS if max_answers is None else max_answers
        self.order = list(self.PEOPLE)
        self.turn = 0
        self.answers = 0
        self.done = False

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.order = list(self.PEOPLE)
        rng.shuffle(self.order)
        self.turn = 0
        self.answers = 0
        self.done = False
        obs = (
            "Six people stand in a row: %s. All have different heights, which you cannot see. "
            "Find the order from tallest to shortest. %s At most %d answers; %d turns."
            % (", ".join(self.PEOPLE), self.GRAMMAR, self.max_answers, self.max_turns)
        )
        return obs, {"turn": 0}

    def _name(self, token):
        for person in self.PEOPLE:
            if person.lower() == token.lower():
                return person
        return None

    def _act(self, cmd):
        if cmd is None:
            return "Invalid action: wrap one command in \\boxed{...}. " + self.GRAMMAR, 0.0, False
        parts = cmd.replace(",", " ").replace(">", " ").split()
        verb = parts[0].lower() if parts else ""
        names = [self._name(p) for p in parts[1:]]
        if verb == "compare":
            if len(names) != 2 or None in names or names[0] == names[1]:
                return "Invalid comparison: name two different people among %s." % ", ".join(self.PEOPLE), 0.0, False
            a, b = names
            taller, shorter = (a, b) if self.order.index(a) < self.order.index(b) else (b, a)
            return "%s is taller than %s." % (taller, shorter), 0.0, False
        if verb == "answer":
            if len(names) != 6 or None in names or len(set(names)) != 6:
                return "Invalid answer: list each of the six names exactly once.", 0.0, False
            self.answers += 1
            if names == self.order:
                return "Correct! Tallest to shortest: %s." % " ".join(self.order), 1.0, True
            pairs = [(i, j) for i in range(6) for j in range(i + 1, 6)]
            agree = sum(1 for i, j in pairs if self.order.index(names[i]) < self.order.index(names[j]))
            # Kendall's tau clipped at 0: a random order agrees on half the pairs and earns nothing.
            reward = round(0.8 * max(0.0, 2 * agree / len(pairs) - 1), 4)
            if self.answers >= self.max_answers:
                return "Wrong order (%d of 15 pairs right); no answers left." % agree, reward, True
            return "Wrong order: %d of the 15 pairs are in the right relative order. %d answer left." % (
                agree, self.max_answers - self.answers), reward, False
        return "Unknown command %r. %s" % (cmd[:60], self.GRAMMAR), 0.0, False

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
        return ["\\boxed{answer %s}" % " ".join(self.order)]

    def close(self):
        pass
