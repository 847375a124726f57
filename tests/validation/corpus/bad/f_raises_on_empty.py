"""Broken: reads the first word of the command without checking there is one."""
import random
import re


class RaisesOnEmptyEnv:
    def __init__(self):
        self.turn = 0

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, 50)
        self.turn = 0
        return "Commands: \\boxed{guess N} or \\boxed{hint}.", {}

    def step(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{([^{}]*)\}", action)
        if not m:
            return "Box a command.", 0.0, False, self.turn >= 10, {}
        words = m[-1].split()
        verb = words[0]
        if verb == "hint":
            return ("Even." if self.secret % 2 == 0 else "Odd."), 0.0, False, self.turn >= 10, {}
        if verb == "guess" and len(words) == 2 and words[1].isdigit():
            ok = int(words[1]) == self.secret
            obs = "Correct!" if ok else "Higher." if int(words[1]) < self.secret else "Lower."
            return obs, float(ok), ok, self.turn >= 10 and not ok, {}
        return "Unknown command.", 0.0, False, self.turn >= 10, {}

    def solution(self):
        return ["\\boxed{guess %d}" % self.secret]
