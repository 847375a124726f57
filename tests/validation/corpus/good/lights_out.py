"""A row of lights: toggling one also toggles its neighbours. Turn every light off."""
import itertools
import random
import re


class LightsOutEnv:
    def __init__(self):
        self.n = 6
        self.max_turns = 15
        self.lights = []
        self.turn = 0

    def _apply(self, lights, i):
        for j in (i - 1, i, i + 1):
            if 0 <= j < self.n:
                lights[j] ^= 1

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.lights = [0] * self.n
        for i in rng.sample(range(self.n), 3):
            self._apply(self.lights, i)
        self.turn = 0
        return f"Lights: {self._row()}. Toggle light i (1-{self.n}) with \\boxed{{i}}.", {}

    def _row(self):
        return "".join("*" if x else "." for x in self.lights)

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(\d+)\s*\}", action)
        if m and 1 <= int(m[-1]) <= self.n:
            self._apply(self.lights, int(m[-1]) - 1)
            msg = f"Toggled {m[-1]}."
        else:
            msg = f"Choose a light from 1 to {self.n}."
        done = not any(self.lights)
        truncated = not done and self.turn >= self.max_turns
        return f"{msg} Lights: {self._row()}", 1.0 if done else 0.0, done, truncated, {}

    def solution(self):
        for k in range(self.n + 1):
            for combo in itertools.combinations(range(self.n), k):
                trial = list(self.lights)
                for i in combo:
                    self._apply(trial, i)
                if not any(trial):
                    return ["\\boxed{%d}" % (i + 1) for i in combo]
        return []

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
