"""Stage 4, determinism: the same seed and actions give the same trajectory twice.

Both runs use the same instance (``reset(seed)`` in between), on every configured seed,
along the reference solution interleaved with probe commands and garbage; ``solution()``
right after each reset is compared too. Environments
whose metadata declares them nondeterministic skip this stage (it is recorded).
"""

from __future__ import annotations

from typing import Any

from ..codes import Reason
from ..context import Run
from ..probes import mixed_sequence
from ..runner import FATAL as _FATAL
from ..runner import Instance, Rejection


def trajectory(env: Instance, seed: int, actions: list[str], *, with_solution: bool = True) -> list[Any]:
    """``[(reset observation, solution()), (obs, reward, terminated, truncated) per step]``
    until done. ``solution()`` right after reset exposes the hidden state the observation
    may not show (a secret drawn without the seed)."""
    obs, _ = env.reset(seed)
    hidden: Any = None
    if with_solution:
        try:
            hidden = env.solution()
        except Rejection as rej:
            if rej.code in _FATAL:
                raise
    out: list[Any] = [(obs, hidden)]
    # play() resets again, so a solution() that touches state cannot leak into the steps.
    out += [(s.observation, s.reward, s.terminated, s.truncated) for s in env.play(seed, actions)]
    return out


def first_difference(a: list[Any], b: list[Any]) -> int | None:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def check(run: Run) -> str:
    if run.candidate.nondeterministic:
        return "skipped: metadata declares the environment nondeterministic"
    env = run.env()
    n = skipped = 0
    for seed in run.config.seeds:
        # One sequence per seed: the solution interleaved with probe commands and garbage.
        sequences = [mixed_sequence(run, seed, min(run.candidate.max_turns, 12))]
        for actions in sequences:
            try:
                first = trajectory(env, seed, actions)
                second = trajectory(env, seed, actions)
            except Rejection as rej:
                if rej.code in _FATAL:
                    raise
                # Another invariant broke along this sequence: the fuzz stage finds it
                # and shrinks it; this stage only judges determinism.
                skipped += 1
                continue
            n += 1
            diff = first_difference(first, second)
            if diff is not None:
                where = "the reset observation" if diff == 0 else f"step {diff}"
                raise Rejection(
                    Reason.nondeterministic,
                    f"same seed {seed} and actions gave different trajectories, first at {where}",
                    actions=actions[: max(diff, 1)] if diff else [],
                    seed=seed,
                    details={"first": _short(first[diff] if diff < len(first) else None),
                             "second": _short(second[diff] if diff < len(second) else None)},
                )
    return f"{n} trajectories replayed identically" + (f" ({skipped} left to the fuzz stage)" if skipped else "")


def _short(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 300 else text[:300] + "..."
