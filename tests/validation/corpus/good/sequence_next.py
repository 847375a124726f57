"""Continue a hidden arithmetic or geometric sequence, three terms one at a time."""
import random
import re


class SequenceNextEnv:
    def __init__(self):
        self.turn = 0
        self.max_turns = 9

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        start = rng.randint(1, 9)
        if rng.random() < 0.5:
            step = rng.randint(2, 7)
            terms = [start + step * i for i in range(8)]
        else:
            ratio = rng.randint(2, 3)
            terms = [start * ratio ** i for i in range(8)]
        self.shown, self.hidden = terms[:4], terms[4:7]
        self.found = 0
        self.turn = 0
        return f"Sequence: {', '.join(map(str, self.shown))}, ... Give the next term with \\boxed{{N}}.", {}

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(-?\d+)\s*\}", action)
        done = False
        if m and int(m[-1]) == self.hidden[self.found]:
            self.found += 1
            done = self.found == len(self.hidden)
            msg = "Correct, sequence complete!" if done else f"Correct. Next term after {m[-1]}?"
        else:
            msg = "Wrong term; try again."
        reward = 1.0 if done else 0.3 * self.found
        truncated = not done and self.turn >= self.max_turns
        return msg, reward, done, truncated, {}

    def solution(self):
        return ["\\boxed{%d}" % t for t in self.hidden[self.found:]]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
