"""Polynomial probe: query a hidden quadratic at points of your choice, then state it."""

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


class PolynomialProbeEnv:
    """Hidden f(x) = a*x^2 + b*x + c; the agent evaluates f and must name a, b, c."""

    LEAD = 5
    SPREAD = 9
    MAX_ANSWERS = 3
    # what an edit may change (spade_designer.knobs): coefficient ranges and the answer budget
    KNOBS = {"LEAD": (int, 1, 9), "SPREAD": (int, 2, 30), "MAX_ANSWERS": (int, 1, 5)}
    HARDER = {"MAX_ANSWERS": "lower"}
    GRAMMAR = (
        "Commands: \\boxed{query X} evaluates f at an integer X in [-10, 10]; "
        "\\boxed{answer A B C} states the coefficients of f(x) = A*x^2 + B*x + C."
    )

    def __init__(self, max_turns=12, max_answers=None):
        self.max_turns = max_turns
        self.max_answers = self.MAX_ANSWERS if max_answers is None else max_answers
        self.coefs = (1, 0, 0)
        self.turn = 0
        self.answers = 0
        self.queries = []
        self.done = False

    def reset(self, seed=None):
        rng = random.Random(seed)
        a = rng.choice([v for v in range(-self.LEAD, self.LEAD + 1) if v != 0])
        b = rng.randint(-self.SPREAD, self.SPREAD)
        c = rng.randint(-self.SPREAD, self.SPREAD)
        self.coefs = (a, b, c)
        self.turn = 0
        self.answers = 0
        self.queries = []
        self.done = False
        obs = (
            "A hidden quadratic f(x) = A*x^2 + B*x + C has integer coefficients: A is non-zero "
            "in [-%d, %d], B and C are in [-%d, %d]. Learn it by evaluating it, then state it. "
            % (self.LEAD, self.LEAD, self.SPREAD, self.SPREAD)
            + self.GRAMMAR
            + " You may answer at most %d times and have %d turns." % (self.max_answers, self.max_turns)
        )
        return obs, {"turn": 0}

    def _f(self, x):
        a, b, c = self.coefs
        return a * x * x + b * x + c

    def _act(self, cmd):
        if cmd is None:
            return "Invalid action: wrap one command in \\boxed{...}. " + self.GRAMMAR, 0.0, False
        parts = cmd.lower().split()
        if len(parts) == 2 and parts[0] == "query":
            if not _INT.match(parts[1]) or not -10 <= int(parts[1]) <= 10:
                return "Invalid query: X must be an integer in [-10, 10].", 0.0, False
            x = int(parts[1])
            self.queries.append(x)
            return "f(%d) = %d" % (x, self._f(x)), 0.0, False
        if len(parts) == 4 and parts[0] == "answer":
            if not all(_INT.match(p) for p in parts[1:]):
                return "Invalid answer: give three integers, e.g. \\boxed{answer 2 -3 5}.", 0.0, False
            guess = tuple(int(p) for p in parts[1:])
            self.answers += 1
            right = sum(1 for g, t in zip(guess, self.coefs) if g == t)
            if right == 3:
                return "Correct: f(x) = %d*x^2 + %d*x + %d." % self.coefs, 1.0, True
            reward = 0.2 * right
            if self.answers >= self.max_answers:
                return "Wrong (%d of 3 coefficients right); no answers left." % right, reward, True
            return (
                "Wrong: %d of 3 coefficients are right. %d answers left."
                % (right, self.max_answers - self.answers),
                reward,
                False,
            )
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
        return ["\\boxed{answer %d %d %d}" % self.coefs]

    def close(self):
        pass
