"""Unscramble a word; the command 'reveal' uncovers one more letter at a cost."""
import random
import re

WORDS = ["planet", "garden", "silver", "bridge", "castle", "winter", "forest", "candle", "rocket", "island"]


class AnagramEnv:
    def __init__(self):
        self.turn = 0
        self.max_turns = 10

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.word = rng.choice(WORDS)
        letters = list(self.word)
        while "".join(letters) == self.word:
            rng.shuffle(letters)
        self.scrambled = "".join(letters)
        self.revealed = 0
        self.turn = 0
        return f"Unscramble: {self.scrambled}. Guess with \\boxed{{word}} or ask \\boxed{{reveal}}.", {}

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*([A-Za-z]+)\s*\}", action)
        guess = m[-1].lower() if m else ""
        reward, done = 0.0, False
        if guess == "reveal":
            self.revealed = min(self.revealed + 1, len(self.word) - 1)
            msg = f"The word starts with '{self.word[: self.revealed]}'."
        elif guess == self.word:
            reward, done = max(0.4, 1.0 - 0.2 * self.revealed), True
            msg = "You got it!"
        elif guess:
            msg = f"'{guess}' is not it."
        else:
            msg = "Give a word in \\boxed{}."
        truncated = not done and self.turn >= self.max_turns
        return msg, reward, done, truncated, {}

    def solution(self):
        return ["\\boxed{%s}" % self.word]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
