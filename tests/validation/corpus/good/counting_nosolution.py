"""Count the vowels of a sentence, one word at a time; no solution() is provided, so the
pipeline marks feasibility unproven."""
import random
import re

SENTENCES = ["the quick brown fox", "a lazy dog sleeps here", "seven silver spoons shine", "open every window now"]


class CountingNosolutionEnv:
    def __init__(self):
        self.turn = 0
        self.max_turns = 12

    def reset(self, seed=None):
        self.over = False
        self.words = random.Random(seed).choice(SENTENCES).split()
        self.index = 0
        self.turn = 0
        return f"Word 1: '{self.words[0]}'. How many vowels? \\boxed{{N}}", {}

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(\d+)\s*\}", action)
        word = self.words[self.index]
        if m and int(m[-1]) == sum(c in "aeiou" for c in word):
            self.index += 1
            if self.index == len(self.words):
                return "All words counted!", 1.0, True, False, {}
            msg = f"Right. Word {self.index + 1}: '{self.words[self.index]}'."
        else:
            msg = f"Wrong, count again for '{word}'."
        truncated = self.turn >= self.max_turns
        return msg, 0.5 * self.index / len(self.words), False, truncated, {}

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
