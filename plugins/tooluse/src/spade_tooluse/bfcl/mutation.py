"""Deliberate changes to a trajectory, for measuring agreement with the official checker."""

from __future__ import annotations

import random
from typing import Any

from spade_core.actions import ToolCall

from .env import STEP_LIMIT, Trajectory

MUTATIONS = ("drop_call", "change_argument", "add_call", "swap_calls", "empty_turn", "split_steps")


def _perturb(value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + rng.choice([1, -1, 7])
    if isinstance(value, float):
        return round(value * 1.5 + 1.0, 3)
    if isinstance(value, str):
        return value + rng.choice(["_x", "2", ".bak"]) if value else "x"
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    if isinstance(value, dict):
        return {**value, "x": 1}
    return "x"


def mutate(trajectory: Trajectory, kind: str, rng: random.Random) -> Trajectory | None:
    """A copy of ``trajectory`` with one deliberate change, or ``None`` when ``kind`` does
    not apply (no call to drop, no two calls to swap, ...)."""
    t = [[list(step) for step in turn] for turn in trajectory]
    slots = [(i, j, k) for i, turn in enumerate(t) for j, step in enumerate(turn) for k in range(len(step))]
    if not slots:
        return None
    if kind == "drop_call":
        i, j, k = rng.choice(slots)
        del t[i][j][k]
    elif kind == "change_argument":
        with_args = [s for s in slots if t[s[0]][s[1]][s[2]].arguments]
        if not with_args:
            return None
        i, j, k = rng.choice(with_args)
        c = t[i][j][k]
        key = rng.choice(sorted(c.arguments))
        t[i][j][k] = ToolCall(c.name, {**c.arguments, key: _perturb(c.arguments[key], rng)})
    elif kind == "add_call":
        i, j, k = rng.choice(slots)
        extra = t[i][j][k]
        ti = rng.randrange(len(t))
        if not t[ti]:
            t[ti] = [[]]
        tj = rng.randrange(len(t[ti]))
        t[ti][tj].insert(rng.randint(0, len(t[ti][tj])), extra)
    elif kind == "swap_calls":
        pairs = [(i, j) for i, turn in enumerate(t) for j, step in enumerate(turn) if len(step) >= 2]
        if not pairs:
            return None
        i, j = rng.choice(pairs)
        a, b = rng.sample(range(len(t[i][j])), 2)
        t[i][j][a], t[i][j][b] = t[i][j][b], t[i][j][a]
    elif kind == "empty_turn":
        nonempty = [i for i, turn in enumerate(t) if any(turn)]
        i = rng.choice(nonempty)
        t[i] = []
    elif kind == "split_steps":
        i, j, _ = rng.choice(slots)
        # One call per message, within the benchmark's per-turn message limit (its inference
        # loop force-terminates beyond it, which its checker function never sees).
        room = STEP_LIMIT - (len(t[i]) - 1)
        calls = t[i][j]
        size = max(1, -(-len(calls) // room))
        t[i][j:j + 1] = [calls[n:n + size] for n in range(0, len(calls), size)]
    else:
        raise ValueError(f"unknown mutation {kind!r} (known: {', '.join(MUTATIONS)})")
    return t
