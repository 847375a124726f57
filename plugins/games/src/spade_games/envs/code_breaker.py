"""Code breaker: find a hidden four-digit code from exact/misplaced feedback (Mastermind rules)."""

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


def _score(code, guess):
    """(exact, misplaced) pegs of a guess against the code."""
    exact = sum(1 for c, g in zip(code, guess) if c == g)
    common = sum(min(code.count(d), guess.count(d)) for d in set(guess))
    return exact, common - exact


class CodeBreakerEnv:
    """A code of 4 digits, each 1-6 (repeats allowed); every guess is scored with pegs."""

    LENGTH = 4
    DIGITS = "123456"
    # what an edit may change (spade_designer.knobs): the code's length and its alphabet
    KNOBS = {"LENGTH": (int, 3, 6), "DIGITS": (str, "1234", "12345", "123456", "1234567", "12345678")}
    HARDER = {"LENGTH": "higher", "DIGITS": "higher"}
    _WORDS = {3: "three", 4: "four", 5: "five", 6: "six"}

    @property
    def GRAMMAR(self):
        n = self._WORDS.get(self.LENGTH, str(self.LENGTH))
        example = ("1123" + self.DIGITS[-1] * 8)[: self.LENGTH]
        return (
            "Command: \\boxed{guess %s} with %s digits, each from %s to %s (repeats allowed), e.g. \\boxed{guess %s}. "
            "Feedback: 'exact' counts right digits in the right place, 'misplaced' counts right digits in the wrong place."
            % ("D" * self.LENGTH, n, self.DIGITS[0], self.DIGITS[-1], example)
        )

    def __init__(self, max_turns=12):
        self.max_turns = max_turns
        self.code = "1111"
        self.turn = 0
        self.history = []
        self.done = False

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.code = "".join(rng.choice(self.DIGITS) for _ in range(self.LENGTH))
        self.turn = 0
        self.history = []
        self.done = False
        obs = "Crack the hidden %d-digit code. %s You have %d turns." % (self.LENGTH, self.GRAMMAR, self.max_turns)
        return obs, {"turn": 0}

    def _act(self, cmd):
        if cmd is None:
            return "Invalid action: wrap one command in \\boxed{...}. " + self.GRAMMAR, 0.0, False
        parts = cmd.lower().split()
        if len(parts) >= 2 and parts[0] == "guess":
            guess = "".join(parts[1:])  # "1 2 3 4" means 1234
            if len(guess) != self.LENGTH or any(ch not in self.DIGITS for ch in guess):
                return "Invalid guess %r: use exactly %s digits from %s to %s." % (
                    guess[:20], self._WORDS.get(self.LENGTH, str(self.LENGTH)), self.DIGITS[0], self.DIGITS[-1]), 0.0, False
            exact, misplaced = _score(self.code, guess)
            self.history.append("%s -> exact %d, misplaced %d" % (guess, exact, misplaced))
            if exact == self.LENGTH:
                return "Cracked! The code is %s." % self.code, 1.0, True
            reward = round(0.8 * (exact + 0.5 * misplaced) / self.LENGTH, 4)
            return "Guess %s: exact %d, misplaced %d. History: %s" % (
                guess, exact, misplaced, "; ".join(self.history)), reward, False
        return "Unknown command %r. %s" % (cmd[:60], self.GRAMMAR), 0.0, False

    def step(self, action):
        if self.done:
            return "The episode is over; call reset().", 0.0, True, False, {"error": "episode_over"}
        self.turn += 1
        obs, reward, terminated = self._act(_command(action))
        truncated = False
        if not terminated and self.turn >= self.max_turns:
            truncated = True
            obs += " Out of turns; the code was %s." % self.code
        self.done = terminated or truncated
        return obs, reward, terminated, truncated, {"turn": self.turn}

    def solution(self):
        """The shortest winning replay from reset(seed); it reads the hidden state."""
        return ["\\boxed{guess %s}" % self.code]

    def close(self):
        pass
