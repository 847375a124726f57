"""Broken: subclasses a base class from another project (``BaseTextEnv``) that neither
the file, the reference namespace nor any domain provides."""


class RelayEnv(BaseTextEnv):
    def reset(self, seed=None):
        self.n = random.Random(seed).randint(1, 5)
        return f"Relay the number {self.n} with \\boxed{{N}}.", {}

    def step(self, action):
        ok = f"\\boxed{{{self.n}}}" in action
        return ("Relayed." if ok else "Dropped."), float(ok), ok, not ok, {}

    def solution(self):
        return ["\\boxed{%d}" % self.n]
