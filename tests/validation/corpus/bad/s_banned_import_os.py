"""Broken: imports os (not on the allow-list)."""
import os
import random
import re


class BannedImportOsEnv:
    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, 50)
        self.user = os.environ.get("USER", "player")
        return f"Hello {self.user}, guess 1-50 with \\boxed{{N}}.", {}

    def step(self, action):
        m = re.findall(r"\\boxed\{(\d+)\}", action)
        ok = bool(m) and int(m[-1]) == self.secret
        return ("Correct!" if ok else "No."), float(ok), ok, False, {}
