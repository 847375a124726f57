"""Broken: echoes the command ten times in a transcript, so a long action produces an
enormous observation."""
import random
import re


class HugeObservationEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, 50)
        self.turn = 0
        return "Guess 1-50 with \\boxed{N}.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{([^{}]*)\}", action)
        said = m[-1] if m else action
        ok = said.strip() == str(self.secret)
        transcript = "\n".join(f"[echo {i}] you said: {said}" for i in range(10))
        return transcript + ("\nCorrect!" if ok else "\nNo."), float(ok), ok, self.turn >= 10 and not ok, {}

    def solution(self):
        return ["\\boxed{%d}" % self.secret]
