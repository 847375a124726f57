"""Broken (with its hint): a fixed maze whose hint lists the exact moves."""
import re

MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
WALLS = {(0, 1), (1, 1), (2, 3), (3, 1)}


class HintLeakMovesEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        self.pos = (0, 0)
        self.turn = 0
        return "4x4 maze from the top-left to the bottom-right. Move with \\boxed{up|down|left|right}.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(\w+)\s*\}", action)
        move = m[-1] if m else ""
        if move in MOVES:
            r, c = self.pos[0] + MOVES[move][0], self.pos[1] + MOVES[move][1]
            if 0 <= r < 4 and 0 <= c < 4 and (r, c) not in WALLS:
                self.pos = (r, c)
        done = self.pos == (3, 3)
        return f"You are at {self.pos}.", float(done), done, self.turn >= 16 and not done, {}

    def solution(self):
        return ["\\boxed{%s}" % m for m in ("down", "down", "right", "right", "down", "right")]
