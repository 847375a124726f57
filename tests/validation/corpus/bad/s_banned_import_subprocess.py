"""Broken: imports subprocess to 'check' answers with a shell."""
import random
import re
from subprocess import run


class BannedImportSubprocessEnv:
    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, 50)
        return "Guess 1-50 with \\boxed{N}.", {}

    def step(self, action):
        m = re.findall(r"\\boxed\{(\d+)\}", action)
        ok = bool(m) and run(["test", m[-1], "-eq", str(self.secret)]).returncode == 0
        return ("Correct!" if ok else "No."), float(ok), ok, False, {}
