"""Affine cipher: use an encryption oracle to crack a hidden letter cipher and decode a message."""

import math
import random
import re
import string

_BOX = re.compile(r"\\boxed\{([^{}]*)\}")

_WORDS = ["river", "stone", "maple", "quiet", "lantern", "harbor", "velvet", "orbit", "meadow",
          "copper", "violet", "thunder", "garden", "silver", "jungle", "pocket", "winter", "zebra"]


def _command(action):
    """Payload of the last \\boxed{...} in the action, whitespace-normalised; None if absent."""
    if not isinstance(action, str):
        return None
    found = _BOX.findall(action)
    if not found:
        return None
    return " ".join(found[-1].strip().split())


class AffineCipherEnv:
    """Letters are enciphered as x -> (a*x + b) mod 26; spaces are kept."""

    ENCODE_LIMIT = 12
    MESSAGE_WORDS = 2
    MAX_ANSWERS = 2
    # what an edit may change (spade_designer.knobs): letters per encode, message length, decodes
    KNOBS = {"ENCODE_LIMIT": (int, 2, 26), "MESSAGE_WORDS": (int, 1, 4), "MAX_ANSWERS": (int, 1, 4)}
    HARDER = {"ENCODE_LIMIT": "lower", "MESSAGE_WORDS": "higher", "MAX_ANSWERS": "lower"}

    @property
    def GRAMMAR(self):
        return (
            "Commands: \\boxed{encode TEXT} enciphers up to %d letters of your choice with the secret key; "
            "\\boxed{decode PLAINTEXT} gives your decryption of the intercepted message." % self.ENCODE_LIMIT
        )

    def __init__(self, max_turns=10, max_answers=None):
        self.max_turns = max_turns
        self.max_answers = self.MAX_ANSWERS if max_answers is None else max_answers
        self.key = (1, 3)
        self.plain = "river stone"
        self.turn = 0
        self.answers = 0
        self.done = False

    def _encrypt(self, text):
        a, b = self.key
        out = []
        for ch in text:
            i = string.ascii_lowercase.find(ch)
            out.append(ch if i < 0 else string.ascii_lowercase[(a * i + b) % 26])
        return "".join(out)

    def reset(self, seed=None):
        rng = random.Random(seed)
        a = rng.choice([k for k in range(1, 26) if math.gcd(k, 26) == 1])
        self.key = (a, rng.randint(1, 25))
        self.plain = " ".join(rng.sample(_WORDS, self.MESSAGE_WORDS))
        self.turn = 0
        self.answers = 0
        self.done = False
        obs = (
            "You intercepted the message '%s'. It was enciphered letter by letter with an unknown "
            "affine key (letters are numbered a=0 ... z=25 and letter x becomes a*x + b mod 26); spaces are unchanged. "
            "You can encrypt your own text with the same key. %s At most %d decodes; %d turns."
            % (self._encrypt(self.plain), self.GRAMMAR, self.max_answers, self.max_turns)
        )
        return obs, {"turn": 0}

    def _act(self, cmd):
        if cmd is None:
            return "Invalid action: wrap one command in \\boxed{...}. " + self.GRAMMAR, 0.0, False
        verb, _, rest = cmd.partition(" ")
        verb, rest = verb.lower(), rest.lower().strip()
        if verb == "encode":
            letters = [ch for ch in rest if ch in string.ascii_lowercase]
            if not rest or len(letters) != len(rest.replace(" ", "")) or len(letters) > self.ENCODE_LIMIT:
                return "Invalid text: encode 1 to %d letters a-z (spaces allowed)." % self.ENCODE_LIMIT, 0.0, False
            return "encode('%s') = '%s'" % (rest, self._encrypt(rest)), 0.0, False
        if verb == "decode":
            if not rest:
                return "Invalid decode: give the plaintext, e.g. \\boxed{decode river stone}.", 0.0, False
            self.answers += 1
            if rest == self.plain:
                return "Correct! The message reads '%s'." % self.plain, 1.0, True
            right = sum(1 for g, t in zip(rest, self.plain) if g == t and t != " ")
            reward = round(0.8 * right / len(self.plain.replace(" ", "")), 4)
            if self.answers >= self.max_answers:
                return "Wrong; no decodes left. It read '%s'." % self.plain, reward, True
            return "Wrong: %d letters are right in place. %d decode left." % (
                right, self.max_answers - self.answers), reward, False
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
        return ["\\boxed{decode %s}" % self.plain]

    def close(self):
        pass
