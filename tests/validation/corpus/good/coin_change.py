"""Pay an exact amount one coin at a time; overpaying loses."""
import random
import re


class CoinChangeEnv:
    def __init__(self):
        self.coins = (1, 2, 5, 10, 20, 50)
        self.turn = 0
        self.max_turns = 12

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.amount = rng.randint(23, 99)
        self.paid = 0
        self.turn = 0
        return f"Pay exactly {self.amount} cents with coins {list(self.coins)}: \\boxed{{coin}} per turn, as few as possible.", {}

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(\d+)\s*\}", action)
        reward, terminated = 0.0, False
        if not m or int(m[-1]) not in self.coins:
            msg = f"Not a coin. Paid {self.paid} of {self.amount}."
        else:
            self.paid += int(m[-1])
            if self.paid == self.amount:
                msg, reward, terminated = "Exact payment!", 1.0, True
            elif self.paid > self.amount:
                msg, terminated = f"Overpaid: {self.paid} > {self.amount}.", True
            else:
                msg = f"Paid {self.paid} of {self.amount}."
                reward = 0.5 * self.paid / self.amount
        truncated = not terminated and self.turn >= self.max_turns
        return msg, reward, terminated, truncated, {}

    def solution(self):
        left, out = self.amount - self.paid, []
        for c in sorted(self.coins, reverse=True):
            while left >= c:
                out.append("\\boxed{%d}" % c)
                left -= c
        return out

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
