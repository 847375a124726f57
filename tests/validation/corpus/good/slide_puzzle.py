"""A 2x3 sliding puzzle scrambled a few moves from solved; slide tiles into the gap."""
import random
import re
from collections import deque

GOAL = (1, 2, 3, 4, 5, 0)
DIRS = {"up": -3, "down": 3, "left": -1, "right": 1}


def neighbours(state):
    gap = state.index(0)
    for name, delta in DIRS.items():
        j = gap + delta
        if not 0 <= j < 6 or (name in ("left", "right") and j // 3 != gap // 3):
            continue
        cells = list(state)
        cells[gap], cells[j] = cells[j], cells[gap]
        yield name, tuple(cells)


class SlidePuzzleEnv:
    def __init__(self):
        self.turn = 0
        self.max_turns = 20

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        state = GOAL
        for _ in range(8):
            state = rng.choice(list(neighbours(state)))[1]
        if state == GOAL:
            state = next(neighbours(GOAL))[1]
        self.state = state
        self.turn = 0
        return self._show("Move the gap with \\boxed{up|down|left|right} until 1 2 3 / 4 5 _."), {}

    def _show(self, msg):
        cells = ["_" if c == 0 else str(c) for c in self.state]
        return f"{msg}\n{' '.join(cells[:3])}\n{' '.join(cells[3:])}"

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(\w+)\s*\}", action)
        moves = dict(neighbours(self.state))
        move = m[-1].lower() if m else ""
        if move in moves:
            self.state = moves[move]
            msg = f"Moved {move}."
        else:
            msg = "That move is not possible."
        done = self.state == GOAL
        truncated = not done and self.turn >= self.max_turns
        return self._show("Solved!" if done else msg), 1.0 if done else 0.0, done, truncated, {}

    def solution(self):
        prev = {self.state: None}
        queue = deque([self.state])
        while queue:
            s = queue.popleft()
            if s == GOAL:
                break
            for name, n in neighbours(s):
                if n not in prev:
                    prev[n] = (s, name)
                    queue.append(n)
        out, s = [], GOAL
        while prev[s] is not None:
            s, name = prev[s]
            out.append("\\boxed{%s}" % name)
        return out[::-1]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
