"""Broken: ASCII-encodes the action to 'normalise' it, which raises on any non-ASCII text."""
import random
import re


class RaisesOnUnicodeEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        self.word = random.Random(seed).choice(["apple", "river", "stone", "cloud"])
        self.turn = 0
        return "Guess my five-letter word with \\boxed{word}; I mark letters in place.", {}

    def step(self, action):
        self.turn += 1
        text = action.encode("ascii").decode("ascii").lower()
        m = re.findall(r"\\boxed\{\s*([a-z]{5})\s*\}", text)
        if not m:
            return "Five letters, please.", 0.0, False, self.turn >= 8, {}
        g = m[-1]
        if g == self.word:
            return "You found it!", 1.0, True, False, {}
        marks = "".join(c.upper() if c == w else "_" for c, w in zip(g, self.word))
        return marks, 0.0, False, self.turn >= 8, {}

    def solution(self):
        return ["\\boxed{%s}" % self.word]
