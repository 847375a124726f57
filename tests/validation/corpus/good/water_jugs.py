"""Two jugs; fill, empty and pour until one holds the target amount."""
import random
import re
from collections import deque


class WaterJugsEnv:
    def __init__(self):
        self.caps = (3, 5)
        self.target = 4
        self.state = (0, 0)
        self.turn = 0
        self.max_turns = 20

    def _moves(self, s):
        a, b = s
        ca, cb = self.caps
        pour_ab = min(a, cb - b)
        pour_ba = min(b, ca - a)
        return {
            "fill A": (ca, b), "fill B": (a, cb), "empty A": (0, b), "empty B": (a, 0),
            "pour A B": (a - pour_ab, b + pour_ab), "pour B A": (a + pour_ba, b - pour_ba),
        }

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.caps = rng.choice([(3, 5), (4, 7), (5, 8)])
        self.target = rng.choice([t for t in range(1, self.caps[1]) if t not in self.caps])
        self.state = (0, 0)
        self.turn = 0
        return (f"Jug A holds {self.caps[0]}, jug B holds {self.caps[1]}. Measure exactly {self.target}. "
                "Commands: \\boxed{fill A}, \\boxed{empty B}, \\boxed{pour A B}..."), {}

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{([^{}]*)\}", action)
        cmd = " ".join(m[-1].split()).lower() if m else ""
        moves = {k.lower(): v for k, v in self._moves(self.state).items()}
        if cmd in moves:
            self.state = moves[cmd]
            msg = f"A={self.state[0]} B={self.state[1]}"
        else:
            msg = f"Unknown command. A={self.state[0]} B={self.state[1]}"
        done = self.target in self.state
        truncated = not done and self.turn >= self.max_turns
        return msg, 1.0 if done else 0.0, done, truncated, {}

    def solution(self):
        prev = {self.state: None}
        queue = deque([self.state])
        while queue:
            s = queue.popleft()
            if self.target in s:
                out = []
                while prev[s] is not None:
                    s, name = prev[s]
                    out.append("\\boxed{%s}" % name)
                return out[::-1]
            for name, nxt in self._moves(s).items():
                if nxt not in prev:
                    prev[nxt] = (s, name)
                    queue.append(nxt)
        return []

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
