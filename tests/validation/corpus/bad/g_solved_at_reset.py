"""Broken: the scramble is applied to a copy, so the board is already sorted at reset and
any action 'wins'."""
import random
import re


class SolvedAtResetEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.items = [1, 2, 3, 4, 5]
        scrambled = list(self.items)
        rng.shuffle(scrambled)
        self.turn = 0
        return f"Sort the list {scrambled} with \\boxed{{swap i j}}.", {}

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*swap\s+([1-5])\s+([1-5])\s*\}", action)
        if m:
            i, j = int(m[-1][0]) - 1, int(m[-1][1]) - 1
            self.items[i], self.items[j] = self.items[j], self.items[i]
        done = self.items == sorted(self.items)
        return f"List: {self.items}", float(done), done, self.turn >= 10 and not done, {}

    def solution(self):
        return ["\\boxed{swap 1 1}"]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
