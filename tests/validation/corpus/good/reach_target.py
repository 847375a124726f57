"""Reach a target number from 1 using the operations +3, *2 and -1."""
import random
import re
from collections import deque

OPS = {"add": lambda x: x + 3, "double": lambda x: x * 2, "dec": lambda x: x - 1}


class ReachTargetEnv:
    def __init__(self):
        self.value = 1
        self.target = 10
        self.turn = 0
        self.max_turns = 14

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.target = rng.randint(12, 40)
        self.value = 1
        self.turn = 0
        return f"Value 1, target {self.target}. Operations: \\boxed{{add}} (+3), \\boxed{{double}} (*2), \\boxed{{dec}} (-1).", {}

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(\w+)\s*\}", action)
        op = m[-1].lower() if m else ""
        if op in OPS:
            self.value = OPS[op](self.value)
            msg = f"Value is now {self.value} (target {self.target})."
        else:
            msg = f"Unknown operation. Value {self.value}."
        done = self.value == self.target
        truncated = not done and (self.turn >= self.max_turns or abs(self.value) > 10_000)
        return msg, 1.0 if done else 0.0, done, truncated, {}

    def solution(self):
        prev = {self.value: None}
        queue = deque([self.value])
        while queue:
            v = queue.popleft()
            if v == self.target:
                break
            for name, fn in OPS.items():
                n = fn(v)
                if -50 < n < 200 and n not in prev:
                    prev[n] = (v, name)
                    queue.append(n)
        out = []
        v = self.target
        while prev[v] is not None:
            v, name = prev[v]
            out.append("\\boxed{%s}" % name)
        return out[::-1]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
