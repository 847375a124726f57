"""Mastermind with three digits from 1-6: feedback counts exact and misplaced digits."""
import random
import re


class MastermindEnv:
    def __init__(self):
        self.max_turns = 12
        self.code = []
        self.turn = 0
        self.done = False

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.code = [rng.randint(1, 6) for _ in range(3)]
        self.turn = 0
        self.done = False
        return "Guess my 3-digit code (digits 1-6), e.g. \\boxed{123}. I reply with exact/misplaced counts.", {}

    def step(self, action):
        if self.done:
            return "Game over.", 0.0, True, False, {}
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*([1-6]{3})\s*\}", action)
        reward, terminated = 0.0, False
        if not m:
            obs = "Invalid guess: give three digits from 1 to 6 in \\boxed{}."
        else:
            guess = [int(c) for c in m[-1]]
            exact = sum(g == c for g, c in zip(guess, self.code))
            common = sum(min(guess.count(d), self.code.count(d)) for d in range(1, 7))
            if exact == 3:
                obs, reward, terminated = "You cracked the code!", 1.0, True
            else:
                obs = f"{m[-1]}: {exact} exact, {common - exact} misplaced."
                reward = exact / 6.0
        truncated = not terminated and self.turn >= self.max_turns
        self.done = terminated or truncated
        return obs, reward, terminated, truncated, {}

    def solution(self):
        return ["\\boxed{%s}" % "".join(str(d) for d in self.code)]
