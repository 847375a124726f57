"""Answer a riddle over up to three attempts, with a clue after each miss.

solution() returns the answer as a string (not a replayable action list), so the pipeline
must mark this environment "feasibility unproven" and still admit it.
"""
import random
import re

RIDDLES = [
    ("What has keys but cannot open locks?", "piano", ["It makes music.", "It has 88 of them."]),
    ("What gets wetter the more it dries?", "towel", ["You use it after a shower.", "It hangs in the bathroom."]),
    ("What has a neck but no head?", "bottle", ["It holds liquids.", "It often has a cap."]),
]


class RiddleUnprovenEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        self.riddle = RIDDLES[random.Random(seed).randrange(len(RIDDLES))]
        self.turn = 0
        return self.riddle[0] + " Answer with \\boxed{word}.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*([A-Za-z]+)\s*\}", action)
        if m and m[-1].lower() == self.riddle[1]:
            return "Correct!", 1.0, True, False, {}
        if self.turn >= 3:
            return "Out of attempts.", 0.0, True, False, {}
        return "No. Clue: " + self.riddle[2][self.turn - 1], 0.0, False, False, {}

    def solution(self):
        return "The answer is the riddle's word, boxed."
