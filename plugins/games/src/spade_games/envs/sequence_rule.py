"""Sequence rule: probe terms of a hidden integer sequence, then extrapolate far beyond them."""

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


def _make_rule(rng):
    """A (family name, term function of n >= 1) pair drawn from several rule families."""
    family = rng.choice(["arithmetic", "quadratic", "recurrence", "interleaved", "affine_growth", "cubic_plus"])
    if family == "arithmetic":
        a, d = rng.randint(-20, 20), rng.choice([v for v in range(-9, 10) if v != 0])
        return family, lambda n: a + d * (n - 1)
    if family == "quadratic":
        p, q, r = rng.randint(1, 3), rng.randint(-5, 5), rng.randint(-9, 9)
        return family, lambda n: p * n * n + q * n + r
    if family == "recurrence":
        x, y = rng.randint(1, 5), rng.randint(1, 7)
        table = [x, y]
        while len(table) < 30:
            table.append(table[-1] + table[-2])
        return family, lambda n: table[n - 1]
    if family == "interleaved":
        a, d1, b, d2 = rng.randint(0, 9), rng.randint(2, 6), rng.randint(20, 40), rng.randint(-5, -1)
        return family, lambda n: a + d1 * ((n - 1) // 2) if n % 2 == 1 else b + d2 * ((n - 2) // 2)
    if family == "affine_growth":
        m, c, s = rng.choice([2, 3]), rng.randint(-3, 3), rng.randint(1, 4)
        table = [s]
        while len(table) < 30:
            table.append(table[-1] * m + c)
        return family, lambda n: table[n - 1]
    k = rng.randint(-5, 5)
    return family, lambda n: n * n * n + k * n


class SequenceRuleEnv:
    """Terms 1-3 are shown; terms up to PROBE_LIMIT can be probed; the agent must give a term in 15-20."""

    PROBE_LIMIT = 10
    MAX_ANSWERS = 2
    # what an edit may change (spade_designer.knobs): the last term that can be probed (always
    # before the asked term) and how many answers the player may give
    KNOBS = {"PROBE_LIMIT": (int, 4, 14), "MAX_ANSWERS": (int, 1, 4)}
    HARDER = {"PROBE_LIMIT": "lower", "MAX_ANSWERS": "lower"}

    @property
    def GRAMMAR(self):
        return (
            "Commands: \\boxed{term N} reveals term number N for 1 <= N <= %d; "
            "\\boxed{answer V} states the value of the requested far term." % self.PROBE_LIMIT
        )

    def __init__(self, max_turns=12, max_answers=None):
        self.max_turns = max_turns
        self.max_answers = self.MAX_ANSWERS if max_answers is None else max_answers
        self.family = "arithmetic"
        self.rule = lambda n: n
        self.target = 15
        self.turn = 0
        self.answers = 0
        self.done = False

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.family, self.rule = _make_rule(rng)
        self.target = rng.randint(15, 20)
        self.turn = 0
        self.answers = 0
        self.done = False
        shown = ", ".join(str(self.rule(n)) for n in (1, 2, 3))
        obs = (
            "A hidden rule generates an integer sequence t(1), t(2), ... It starts %s, ... "
            "Several rules fit three terms, so probe more before you commit. What is t(%d)? %s "
            "At most %d answers; %d turns." % (shown, self.target, self.GRAMMAR, self.max_answers, self.max_turns)
        )
        return obs, {"turn": 0}

    def _act(self, cmd):
        if cmd is None:
            return "Invalid action: wrap one command in \\boxed{...}. " + self.GRAMMAR, 0.0, False
        parts = cmd.lower().split()
        if len(parts) == 2 and parts[0] == "term":
            if not _INT.match(parts[1]) or not 1 <= int(parts[1]) <= self.PROBE_LIMIT:
                return "Invalid probe: N must be an integer from 1 to %d." % self.PROBE_LIMIT, 0.0, False
            n = int(parts[1])
            return "t(%d) = %d" % (n, self.rule(n)), 0.0, False
        if len(parts) == 2 and parts[0] == "answer":
            if not _INT.match(parts[1]):
                return "Invalid answer: give one integer, e.g. \\boxed{answer 1234}.", 0.0, False
            self.answers += 1
            value, truth = int(parts[1]), self.rule(self.target)
            if value == truth:
                return "Correct! t(%d) = %d." % (self.target, truth), 1.0, True
            closeness = max(0.0, 1.0 - abs(value - truth) / max(1, abs(truth)))
            reward = round(0.5 * closeness, 4)
            if self.answers >= self.max_answers:
                return "Wrong; no answers left. t(%d) was %d." % (self.target, truth), reward, True
            return "Wrong. %d answer left." % (self.max_answers - self.answers), reward, False
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
        return ["\\boxed{answer %d}" % self.rule(self.target)]

    def close(self):
        pass
