"""Broken: hopping N cells around a ring must not land where you stood; the loop that
enforces it never ends when N is a multiple of the ring size (e.g. 0)."""
import random
import re


class InfiniteLoopEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.size = 12
        self.occupied = set(rng.sample(range(1, 12), 4))
        free = [c for c in range(1, self.size) if c not in self.occupied]
        self.goal = rng.choice(free)
        self.pos = 0
        self.turn = 0
        return f"Ring of 12 cells, you are on 0, goal {self.goal}. Hop with \\boxed{{N}}; occupied cells push you on.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(\d+)\s*\}", action)
        if not m:
            return "Hop with a number.", 0.0, False, self.turn >= 12, {}
        hop = int(m[-1])
        start = self.pos
        self.pos = (self.pos + hop) % self.size
        while self.pos in self.occupied or self.pos == start:
            self.pos = (self.pos + hop) % self.size
        done = self.pos == self.goal
        return f"You are on {self.pos}.", float(done), done, self.turn >= 12 and not done, {}

    def solution(self):
        return ["\\boxed{%d}" % self.goal]
