"""Sort a list of numbers by swapping two positions at a time; a valid swap is paid its
progress, an invalid one nothing."""
import random
import re


class SortSwapsEnv:
    def __init__(self):
        self.items = []
        self.turn = 0
        self.max_turns = 15

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.items = rng.sample(range(1, 20), 5)
        while self.items == sorted(self.items):
            rng.shuffle(self.items)
        self.turn = 0
        return f"Sort ascending: {self.items}. Swap positions with \\boxed{{swap i j}} (1-based).", {}

    def _score(self):
        target = sorted(self.items)
        return sum(a == b for a, b in zip(self.items, target)) / len(target)

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*swap\s+(\d+)\s+(\d+)\s*\}", action)
        if not (m and all(1 <= int(x) <= len(self.items) for x in m[-1])):
            return f"Invalid. Still: {self.items}", 0.0, False, self.turn >= self.max_turns, {}
        i, j = int(m[-1][0]) - 1, int(m[-1][1]) - 1
        self.items[i], self.items[j] = self.items[j], self.items[i]
        msg = f"Now: {self.items}"
        done = self.items == sorted(self.items)
        reward = 1.0 if done else 0.5 * self._score()
        truncated = not done and self.turn >= self.max_turns
        return msg, reward, done, truncated, {}

    def solution(self):
        items = list(self.items)
        moves = []
        for i in range(len(items)):
            j = items.index(min(items[i:]), i)
            if j != i:
                items[i], items[j] = items[j], items[i]
                moves.append("\\boxed{swap %d %d}" % (i + 1, j + 1))
        return moves

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
