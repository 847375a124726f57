"""Environment sources the serving tests serve (plain strings: they run in sandbox workers)."""

from __future__ import annotations

from spade_core.metadata import EnvMetadata, EnvStatus
from spade_serve.catalog import ServedEnv

#: Counts turns; "win" ends the episode with reward 1; "boom" raises inside step; "hang"
#: spins until the sandbox's deadline kills the worker. The first observation depends on
#: the seed, so seeding is visible from outside.
COUNTER = '''
import random


class CounterEnv:
    def __init__(self):
        self.turn = 0
        self.secret = 0

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(0, 10**9)
        self.turn = 0
        return f"secret {self.secret}", {"seed": seed}

    def step(self, action):
        if action == "boom":
            raise ValueError("the environment broke on purpose")
        if action == "hang":
            while True:
                pass
        self.turn += 1
        won = action == "win"
        return f"turn {self.turn}: {action} ({self.secret})", 1.0 if won else 0.0, won, False, {"turn": self.turn}

    def solution(self):
        return ["win"]
'''


def served(name: str = "counter", source: str = COUNTER, *, max_turns: int = 5, kind: str = "store") -> ServedEnv:
    """A :class:`ServedEnv` of ``source`` without a store (metadata as the store keeps it)."""
    meta = EnvMetadata(
        name=name,
        domain="testing",
        skill="counting",
        description="counts turns",
        max_turns=max_turns,
        class_name="CounterEnv",
        status=EnvStatus.admitted,
    )
    return ServedEnv(kind, meta, source, ())  # type: ignore[arg-type]
