"""Broken (with its hint): a maze (mirrored on odd seeds) whose hint lists seed 0's exact moves."""
import re

MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
WALLS = {(0, 1), (1, 1), (2, 3), (3, 1)}


class HintLeakMovesEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        self.over = False
        self.mirrored = (seed or 0) % 2 == 1
        self.walls = {(c, r) for r, c in WALLS} if self.mirrored else WALLS
        self.pos = (0, 0)
        self.turn = 0
        return "4x4 maze from the top-left to the bottom-right. Move with \\boxed{up|down|left|right}.", {}

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(\w+)\s*\}", action)
        move = m[-1] if m else ""
        if move in MOVES:
            r, c = self.pos[0] + MOVES[move][0], self.pos[1] + MOVES[move][1]
            if 0 <= r < 4 and 0 <= c < 4 and (r, c) not in self.walls:
                self.pos = (r, c)
        done = self.pos == (3, 3)
        return f"You are at {self.pos}.", float(done), done, self.turn >= 16 and not done, {}

    def solution(self):
        moves = ("down", "down", "right", "right", "down", "right")
        swap = {"down": "right", "right": "down"}
        return ["\\boxed{%s}" % (swap[m] if self.mirrored else m) for m in moves]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
