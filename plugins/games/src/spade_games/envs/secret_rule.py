"""Secret rule: test numbers against a hidden property, then classify a challenge set."""

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


def _digits(n):
    return [int(ch) for ch in str(n)]


# Each rule is a property of a whole number from 1 to 999. Names stay hidden from the agent.
_RULES = [
    ("multiple of 3", lambda n: n % 3 == 0),
    ("multiple of 4", lambda n: n % 4 == 0),
    ("multiple of 7", lambda n: n % 7 == 0),
    ("contains the digit 5", lambda n: "5" in str(n)),
    ("digit sum is even", lambda n: sum(_digits(n)) % 2 == 0),
    ("digits strictly increase", lambda n: all(a < b for a, b in zip(_digits(n), _digits(n)[1:]))),
    ("last digit greater than first digit", lambda n: _digits(n)[-1] > _digits(n)[0]),
    ("between 300 and 599", lambda n: 300 <= n <= 599),
    ("ends in 1, 4 or 9", lambda n: n % 10 in (1, 4, 9)),
    ("has a repeated digit", lambda n: len(set(str(n))) < len(str(n))),
]


class SecretRuleEnv:
    """A hidden property of numbers 1-999; 2 * PER_CLASS challenge numbers (PER_CLASS of them fit)
    must be classified."""

    PER_CLASS = 3
    # what an edit may change (spade_designer.knobs): challenge numbers that fit (as many do not)
    KNOBS = {"PER_CLASS": (int, 2, 5)}
    HARDER = {"PER_CLASS": "higher"}
    _WORDS = {4: "four", 6: "six", 8: "eight", 10: "ten"}

    @property
    def GRAMMAR(self):
        return (
            "Commands: \\boxed{test N} tells whether a whole number N (1-999) fits the secret rule; "
            "\\boxed{classify %s} gives one letter per challenge number, in order: Y = fits, N = does not. "
            "You may classify only once." % ("YNYNNY" * 2)[: 2 * self.PER_CLASS]
        )

    def __init__(self, max_turns=14):
        self.max_turns = max_turns
        self.rule_index = 0
        self.challenge = []
        self.turn = 0
        self.done = False

    def _fits(self, n):
        return _RULES[self.rule_index][1](n)

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.rule_index = rng.randrange(len(_RULES))
        pool = list(range(10, 1000))
        rng.shuffle(pool)
        yes, no = [], []
        for n in pool:
            bucket = yes if self._fits(n) else no
            if len(bucket) < self.PER_CLASS:
                bucket.append(n)
            if len(yes) == self.PER_CLASS and len(no) == self.PER_CLASS:
                break
        self.challenge = yes + no
        rng.shuffle(self.challenge)
        self.turn = 0
        self.done = False
        obs = (
            "I have a secret rule about whole numbers. Challenge numbers: %s. Find out which of them "
            "fit the rule. %s You have %d turns."
            % (", ".join(str(n) for n in self.challenge), self.GRAMMAR, self.max_turns)
        )
        return obs, {"turn": 0}

    def _count(self):
        return self._WORDS.get(2 * self.PER_CLASS, str(2 * self.PER_CLASS))

    def _truth(self):
        return "".join("Y" if self._fits(n) else "N" for n in self.challenge)

    def _act(self, cmd):
        if cmd is None:
            return "Invalid action: wrap one command in \\boxed{...}. " + self.GRAMMAR, 0.0, False
        parts = cmd.split()
        verb = parts[0].lower() if parts else ""
        if verb == "test":
            if len(parts) != 2 or not parts[1].isdecimal() or not 1 <= int(parts[1]) <= 999:
                return "Invalid test: give one whole number from 1 to 999.", 0.0, False
            n = int(parts[1])
            if n in self.challenge:
                return "You may not test a challenge number directly; test other numbers.", 0.0, False
            return "%d %s the rule." % (n, "FITS" if self._fits(n) else "does NOT fit"), 0.0, False
        if verb == "classify":
            verdict = "".join(parts[1:]).upper()
            if len(verdict) != len(self.challenge) or any(ch not in "YN" for ch in verdict):
                return "Invalid classification: give exactly %s letters Y or N." % self._count(), 0.0, False
            truth = self._truth()
            right = sum(1 for v, t in zip(verdict, truth) if v == t)
            if right == len(truth):
                return "All %s classified correctly. The rule was: %s." % (self._count(), _RULES[self.rule_index][0]), 1.0, True
            return "%d of %d correct (answer %s). The rule was: %s." % (
                right, len(truth), truth, _RULES[self.rule_index][0]), round(0.8 * max(0.0, 2 * right / len(truth) - 1), 4), True
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
        return ["\\boxed{classify %s}" % self._truth()]

    def close(self):
        pass
