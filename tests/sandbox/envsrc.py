"""Environment sources used by the sandbox tests (plain strings: they run in workers)."""

COUNTER = '''
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any


@dataclass
class _State:
    turn: int = 0
    history: list[str] = field(default_factory=list)


class CounterEnv:
    """Counts steps; 'win' ends the episode with reward 1."""

    def __init__(self, max_turns: int = 10) -> None:
        super().__init__()
        self.max_turns = max_turns
        self.state = _State()
        self.secret = 0

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.secret = rng.randint(0, 10**6)
        self.state = _State()
        return f"secret {self.secret}", {"seed": seed}

    def step(self, action):
        self.state.turn += 1
        self.state.history.append(action)
        done = action == "win"
        return f"turn {self.state.turn}: {action}", 1.0 if done else 0.0, done, False, {"turn": self.state.turn}

    def solution(self):
        return ["win"]

    def close(self):
        pass


if __name__ == "__main__":
    env = CounterEnv()
    print(env.reset(seed=1))
'''


def step_body(body: str, *, name: str = "ProbeEnv", imports: str = "") -> str:
    """An environment whose step() runs ``body`` (indented by the caller's convention:
    one statement per line, no indentation) and then returns a normal result."""
    lines = "\n".join("        " + line for line in body.strip().splitlines())
    return f'''
{imports}

class {name}:
    def reset(self, seed=None):
        return "ready", {{}}

    def step(self, action):
{lines}
        return "done", 0.0, False, False, {{}}
'''


def step_returns(expr: str, *, name: str = "GarbageEnv", imports: str = "") -> str:
    """An environment whose step() returns ``expr``."""
    return f'''
{imports}

class {name}:
    def reset(self, seed=None):
        return "ready", {{}}

    def step(self, action):
        return {expr}
'''


#: Modules the zygote does not pre-import (so environment code in a worker, where no file
#: can be opened, cannot import them at all), but which the OS-layer tests hand to the
#: attack code as allowed modules: those tests are about the system call the OS layers must
#: stop, not about the import failing first.
OS_GADGET_MODULES = ("fcntl", "pathlib", "subprocess", "threading")
