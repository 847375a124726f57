"""Answer a chain of three dependent arithmetic questions, one per turn."""
import random
import re


class ArithmeticChainEnv:
    def __init__(self):
        self.turn = 0
        self.max_turns = 10

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        a, b, c, d = (rng.randint(2, 12) for _ in range(4))
        self.questions = [
            (f"What is {a} * {b}?", a * b),
            (f"Add {c} to the previous answer.", a * b + c),
            (f"Subtract {d} from the previous answer.", a * b + c - d),
        ]
        self.index = 0
        self.turn = 0
        return self.questions[0][0] + " Answer with \\boxed{N}.", {}

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(-?\d+)\s*\}", action)
        reward, done = self.index / 3.0, False
        if m and int(m[-1]) == self.questions[self.index][1]:
            self.index += 1
            reward = self.index / 3.0
            if self.index == 3:
                msg, done = "All three correct!", True
            else:
                msg = "Correct. " + self.questions[self.index][0]
        else:
            msg = "Not right. " + self.questions[self.index][0]
            reward = 0.0
        truncated = not done and self.turn >= self.max_turns
        return msg, reward, done, truncated, {"solved": self.index}

    def solution(self):
        return ["\\boxed{%d}" % q[1] for q in self.questions[self.index:]]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
