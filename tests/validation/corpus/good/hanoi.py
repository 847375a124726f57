"""Tower of Hanoi with three disks; partial reward for disks stacked on peg C."""
import re


class HanoiEnv:
    def __init__(self):
        self.n = 3
        self.max_turns = 20
        self.pegs = {}
        self.turn = 0

    def reset(self, seed=None):
        self.over = False
        self.n = 3 if seed is None else 3 + seed % 2
        self.pegs = {"A": list(range(self.n, 0, -1)), "B": [], "C": []}
        self.turn = 0
        self.max_turns = 2 ** self.n + 8
        return self._show(f"Move all {self.n} disks from A to C with \\boxed{{move X Y}}."), {}

    def _show(self, msg):
        return msg + " " + " | ".join(f"{k}: {v}" for k, v in self.pegs.items())

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*move\s+([ABC])\s+([ABC])\s*\}", action, re.I)
        if not m:
            msg = "Use \\boxed{move X Y} with pegs A, B, C."
        else:
            src, dst = m[-1][0].upper(), m[-1][1].upper()
            if not self.pegs[src]:
                msg = f"Peg {src} is empty."
            elif self.pegs[dst] and self.pegs[dst][-1] < self.pegs[src][-1]:
                msg = "A larger disk cannot go on a smaller one."
            else:
                self.pegs[dst].append(self.pegs[src].pop())
                msg = f"Moved a disk from {src} to {dst}."
        done = len(self.pegs["C"]) == self.n
        reward = 1.0 if done else 0.5 * sum(1 for i, d in enumerate(self.pegs["C"]) if d == self.n - i) / self.n
        truncated = not done and self.turn >= self.max_turns
        return self._show("Solved! " if done else msg), reward, done, truncated, {}

    def solution(self):
        moves = []

        def solve(k, a, b, c):
            if k:
                solve(k - 1, a, c, b)
                moves.append("\\boxed{move %s %s}" % (a, c))
                solve(k - 1, b, a, c)

        solve(self.n, "A", "B", "C")
        return moves

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
