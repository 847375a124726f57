"""Near-duplicate of good/hanoi.py: reformatted, renamed, comments added."""
import re


class TowersEnv:
    def __init__(self):
        self.disks = 3
        self.max_turns = 20
        self.towers = {}
        self.count = 0

    def reset(self, seed=None):
        # three or four disks depending on the seed
        self.over = False
        self.disks = 3 if seed is None else 3 + seed % 2
        self.towers = {"A": list(range(self.disks, 0, -1)), "B": [], "C": []}
        self.count = 0
        self.max_turns = 2 ** self.disks + 8
        return self._render(f"Move all {self.disks} disks from A to C with \\boxed{{move X Y}}."), {}

    def _render(self, text):
        return text + " " + " | ".join(f"{k}: {v}" for k, v in self.towers.items())

    def _play(self, action):
        self.count += 1
        found = re.findall(r"\\boxed\{\s*move\s+([ABC])\s+([ABC])\s*\}", action, re.I)
        if not found:
            text = "Use \\boxed{move X Y} with pegs A, B, C."
        else:
            a, b = found[-1][0].upper(), found[-1][1].upper()
            if not self.towers[a]:
                text = f"Peg {a} is empty."
            elif self.towers[b] and self.towers[b][-1] < self.towers[a][-1]:
                text = "A larger disk cannot go on a smaller one."
            else:
                # legal move
                self.towers[b].append(self.towers[a].pop())
                text = f"Moved a disk from {a} to {b}."
        finished = len(self.towers["C"]) == self.disks
        reward = 1.0 if finished else 0.5 * sum(1 for i, d in enumerate(self.towers["C"]) if d == self.disks - i) / self.disks
        truncated = not finished and self.count >= self.max_turns
        return self._render("Solved! " if finished else text), reward, finished, truncated, {}

    def solution(self):
        out = []

        def rec(k, src, via, dst):
            if k:
                rec(k - 1, src, dst, via)
                out.append("\\boxed{move %s %s}" % (src, dst))
                rec(k - 1, via, src, dst)

        rec(self.disks, "A", "B", "C")
        return out

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
