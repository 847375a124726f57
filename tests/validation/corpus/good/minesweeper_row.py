"""A row of eight cells hides two mines; reveal every safe cell using neighbour counts."""
import random
import re


class MinesweeperRowEnv:
    def __init__(self):
        self.n = 8
        self.turn = 0
        self.max_turns = 14

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.mines = set(rng.sample(range(self.n), 2))
        self.open = set()
        self.turn = 0
        return f"{self._row()}\nReveal a cell with \\boxed{{i}} (1-{self.n}). Numbers count mines next to a cell.", {}

    def _count(self, i):
        return sum(j in self.mines for j in (i - 1, i + 1))

    def _row(self):
        return " ".join(str(self._count(i)) if i in self.open else "?" for i in range(self.n))

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(\d+)\s*\}", action)
        safe = self.n - len(self.mines)
        reward, done = len(self.open) / safe * 0.5, False
        if m and 1 <= int(m[-1]) <= self.n:
            i = int(m[-1]) - 1
            if i in self.mines:
                return f"Boom! A mine at {i + 1}.", 0.0, True, False, {}
            self.open.add(i)
            reward = len(self.open) / safe * 0.5
            if len(self.open) == safe:
                reward, done = 1.0, True
            msg = self._row()
        else:
            msg = "Pick a cell number."
        truncated = not done and self.turn >= self.max_turns
        return msg, reward, done, truncated, {}

    def solution(self):
        return ["\\boxed{%d}" % (i + 1) for i in range(self.n) if i not in self.mines and i not in self.open]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
