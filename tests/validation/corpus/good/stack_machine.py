"""Drive a tiny stack machine (push, add, mul, dup) until the top of the stack is the target."""
import random
import re


class StackMachineEnv:
    def __init__(self):
        self.turn = 0
        self.max_turns = 12

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.x, self.y = rng.randint(2, 9), rng.randint(2, 9)
        self.target = (self.x + self.y) * self.y
        self.stack = []
        self.turn = 0
        return f"Make the top of the stack equal {self.target}. Ops: push N (0-9), add, mul, dup, pop.", {}

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{([^{}]*)\}", action)
        parts = m[-1].split() if m else []
        msg = "ok"
        if len(parts) == 2 and parts[0] == "push" and len(parts[1]) == 1 and parts[1] in "0123456789":
            self.stack.append(int(parts[1]))
        elif parts in (["add"], ["mul"]) and len(self.stack) >= 2:
            b, a = self.stack.pop(), self.stack.pop()
            self.stack.append(a + b if parts[0] == "add" else a * b)
        elif parts == ["dup"] and self.stack:
            self.stack.append(self.stack[-1])
        elif parts == ["pop"] and self.stack:
            self.stack.pop()
        else:
            msg = "invalid instruction"
        self.stack = self.stack[-8:]
        done = bool(self.stack) and self.stack[-1] == self.target
        truncated = not done and self.turn >= self.max_turns
        return f"{msg}; stack = {self.stack}", 1.0 if done else 0.0, done, truncated, {}

    def solution(self):
        return ["\\boxed{push %d}" % self.x, "\\boxed{push %d}" % self.y, "\\boxed{add}",
                "\\boxed{push %d}" % self.y, "\\boxed{mul}"]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
