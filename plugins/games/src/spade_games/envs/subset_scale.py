"""Subset scale: weigh groups of boxes (never one alone) and deduce every box's weight."""

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


class SubsetScaleEnv:
    """Four boxes A-D with hidden integer weights 1..MAX_WEIGHT; the scale only accepts 2+ boxes at once."""

    NAMES = "ABCD"
    MAX_WEIGHT = 20
    MAX_ANSWERS = 2
    # what an edit may change (spade_designer.knobs): the heaviest possible box, the answer budget
    KNOBS = {"MAX_WEIGHT": (int, 5, 99), "MAX_ANSWERS": (int, 1, 4)}
    HARDER = {"MAX_ANSWERS": "lower"}
    GRAMMAR = (
        "Commands: \\boxed{weigh A C} puts two or more distinct boxes on the scale and reports their "
        "total weight; \\boxed{answer WA WB WC WD} states the four weights in order A, B, C, D."
    )

    def __init__(self, max_turns=10, max_answers=None):
        self.max_turns = max_turns
        self.max_answers = self.MAX_ANSWERS if max_answers is None else max_answers
        self.weights = [1, 1, 1, 1]
        self.turn = 0
        self.answers = 0
        self.done = False

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.weights = [rng.randint(1, self.MAX_WEIGHT) for _ in self.NAMES]
        self.turn = 0
        self.answers = 0
        self.done = False
        obs = (
            "Four sealed boxes A, B, C, D each weigh a whole number of kilograms between 1 and %d. "
            "The scale is jammed: it only works with at least two boxes on it. Work out every "
            "weight. %s At most %d answers; %d turns."
            % (self.MAX_WEIGHT, self.GRAMMAR, self.max_answers, self.max_turns)
        )
        return obs, {"turn": 0}

    def _act(self, cmd):
        if cmd is None:
            return "Invalid action: wrap one command in \\boxed{...}. " + self.GRAMMAR, 0.0, False
        parts = cmd.upper().replace(",", " ").split()
        if parts and parts[0] == "WEIGH":
            boxes = parts[1:]
            if len(boxes) < 2 or len(set(boxes)) != len(boxes) or not all(b in self.NAMES for b in boxes):
                return "Invalid weighing: name two or more distinct boxes among A, B, C, D.", 0.0, False
            total = sum(self.weights[self.NAMES.index(b)] for b in boxes)
            return "The scale reads %d kg for %s." % (total, " + ".join(boxes)), 0.0, False
        if parts and parts[0] == "ANSWER":
            if len(parts) != 5 or not all(_INT.match(p) for p in parts[1:]):
                return "Invalid answer: give four integers, e.g. \\boxed{answer 3 7 12 5}.", 0.0, False
            guess = [int(p) for p in parts[1:]]
            self.answers += 1
            right = sum(1 for g, w in zip(guess, self.weights) if g == w)
            if right == 4:
                return "Correct! The weights are %s." % " ".join(str(w) for w in self.weights), 1.0, True
            reward = 0.2 * right
            if self.answers >= self.max_answers:
                return "Wrong (%d of 4 right); no answers left." % right, reward, True
            return "Wrong: %d of 4 weights are right. %d answer left." % (right, self.max_answers - self.answers), reward, False
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
        return ["\\boxed{answer %s}" % " ".join(str(w) for w in self.weights)]

    def close(self):
        pass
