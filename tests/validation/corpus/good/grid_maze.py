"""Walk through a 5x5 maze with walls to the exit."""
import random
import re
from collections import deque

MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}


class GridMazeEnv:
    def __init__(self):
        self.size = 5
        self.max_turns = 24
        self.walls = set()
        self.pos = (0, 0)
        self.goal = (4, 4)
        self.turn = 0

    def _path(self, start):
        prev = {start: None}
        queue = deque([start])
        while queue:
            cell = queue.popleft()
            if cell == self.goal:
                break
            for name, (dr, dc) in MOVES.items():
                nxt = (cell[0] + dr, cell[1] + dc)
                if 0 <= nxt[0] < self.size and 0 <= nxt[1] < self.size and nxt not in self.walls and nxt not in prev:
                    prev[nxt] = (cell, name)
                    queue.append(nxt)
        if self.goal not in prev:
            return None
        moves = []
        cell = self.goal
        while prev[cell] is not None:
            cell, name = prev[cell]
            moves.append(name)
        return moves[::-1]

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        while True:
            cells = [(r, c) for r in range(self.size) for c in range(self.size) if (r, c) not in ((0, 0), (4, 4))]
            self.walls = set(rng.sample(cells, 6))
            if self._path((0, 0)) is not None:
                break
        self.pos = (0, 0)
        self.turn = 0
        return self._view("Reach E from S. Moves: \\boxed{up|down|left|right}."), {}

    def _view(self, msg):
        rows = []
        for r in range(self.size):
            row = ""
            for c in range(self.size):
                row += "S" if (r, c) == self.pos else "E" if (r, c) == self.goal else "#" if (r, c) in self.walls else "."
            rows.append(row)
        return msg + "\n" + "\n".join(rows)

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(\w+)\s*\}", action)
        move = m[-1].lower() if m else None
        reward, terminated = 0.0, False
        if move not in MOVES:
            msg = "Unknown move."
        else:
            dr, dc = MOVES[move]
            nxt = (self.pos[0] + dr, self.pos[1] + dc)
            if 0 <= nxt[0] < self.size and 0 <= nxt[1] < self.size and nxt not in self.walls:
                self.pos = nxt
                msg = f"You moved {move}."
            else:
                msg = "A wall blocks the way."
            if self.pos == self.goal:
                msg, reward, terminated = "You reached the exit!", 1.0, True
        truncated = not terminated and self.turn >= self.max_turns
        return self._view(msg), reward, terminated, truncated, {"pos": list(self.pos)}

    def solution(self):
        return ["\\boxed{%s}" % m for m in self._path(self.pos)]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
