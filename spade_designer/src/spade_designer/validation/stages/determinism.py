"""Stage 4, determinism: the same seed and actions give the same trajectory, wherever
and whenever they are replayed.

Both runs use the same instance (``reset(seed)`` in between), on every configured seed,
along the reference solution interleaved with probe commands and garbage; ``solution()``
right after each reset is compared too (``nondeterministic``). The first trajectory is
then replayed right after an episode that ended and on a fresh instance
(``state_across_resets``: state ``reset`` does not clear), and every one in a worker of
another process (``process_dependent``: set or hash order of strings differs between
processes, so the same environment would differ between server restarts and ranks).
Environments whose metadata declares them nondeterministic skip this stage (it is
recorded).
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
    recorded: list[tuple[int, list[str], list[Any]]] = []
    for seed in run.config.seeds:
        # One sequence per seed: the solution interleaved with probe commands and garbage.
        actions = mixed_sequence(run, seed, min(run.candidate.max_turns, 12))
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
            if _same_in_this_process(run, seed, actions, first):  # a fresh instance agrees with the first run
                raise _differs(Reason.state_across_resets,
                               f"seed {seed} replayed after an episode on the same instance gave another trajectory "
                               "than on a fresh one: reset() does not clear what the episode left",
                               seed, actions, first, second, diff)
            raise _differs(Reason.nondeterministic, f"same seed {seed} and actions gave different trajectories",
                           seed, actions, first, second, diff)
        recorded.append((seed, actions, first))
    across = _across_episodes(run, env, recorded[:1])
    other = _in_another_process(run, recorded)
    return (f"{n} trajectories replayed identically" + (f" ({skipped} left to the fuzz stage)" if skipped else "")
            + across + other)


def _differs(code: Reason, what: str, seed: int, actions: list[str], first: list[Any], second: list[Any],
             diff: int) -> Rejection:
    where = "the reset observation" if diff == 0 else f"step {diff}"
    return Rejection(
        code,
        f"{what}, first at {where}",
        actions=actions[: max(diff, 1)] if diff else [],
        seed=seed,
        details={"first": _short(first[diff] if diff < len(first) else None),
                 "second": _short(second[diff] if diff < len(second) else None)},
    )


def _finished_episode(run: Run, env: Instance, seed: int) -> None:
    """Play one episode on ``env`` to its end: the solution, else garbage to the cap."""
    from ..probes import GARBAGE

    plans = run.solution_plans(seed)
    actions = list(plans[0]) if plans else []
    actions += [GARBAGE[1]] * (run.candidate.max_turns + 1)
    env.play(seed, actions)


def _across_episodes(run: Run, env: Instance, recorded: list[tuple[int, list[str], list[Any]]]) -> str:
    """The recorded trajectory again on the same instance right after an episode that
    ended (won, or cut at the turn cap): state that ``reset`` forgets to clear (a done
    flag, a turn count, a history) shows here. (A fresh instance is the degenerate
    stage's comparison: randomness drawn at construction.)"""
    if not recorded:
        return ""
    seed, actions, expected = recorded[0]
    try:
        _finished_episode(run, env, seed)
        after = trajectory(env, seed, actions)
    except Rejection as rej:
        if rej.code in _FATAL:
            raise
        return ""  # another invariant broke: the fuzz stage's to report
    diff = first_difference(expected, after)
    if diff is not None:
        raise _differs(Reason.state_across_resets,
                       f"seed {seed} replayed right after an episode that ended gave another trajectory than "
                       "before: reset() does not clear what earlier episodes left", seed, actions, expected, after, diff)
    return "; reset() clears earlier episodes"


def _same_in_this_process(run: Run, seed: int, actions: list[str], expected: list[Any]) -> bool:
    """Whether a fresh instance in this process replays ``expected``: if not, the
    difference is randomness drawn at construction or state left by earlier episodes,
    which later stages name, not the process."""
    fresh = run.new_instance()
    try:
        return first_difference(expected, trajectory(fresh, seed, actions)) is None
    except Rejection as rej:
        if rej.code in _FATAL:
            raise
        return False
    finally:
        fresh.close()


def _in_another_process(run: Run, recorded: list[tuple[int, list[str], list[Any]]]) -> str:
    """Every recorded trajectory replayed in a worker of another process (another hash
    seed for ``str``, another address layout): an environment that iterates a set of
    strings, or orders by ``hash``/``id``, gives other episodes in another process (a
    server restart, another rank or Ray actor)."""
    runner = run.alternate() if run.alternate is not None else None
    if runner is None or not recorded:
        return ""
    other = run.new_instance(runner)
    try:
        for seed, actions, expected in recorded:
            try:
                got = trajectory(other, seed, actions)
            except Rejection as rej:
                if rej.code in _FATAL:
                    raise
                continue
            diff = first_difference(expected, got)
            if diff is not None and _same_in_this_process(run, seed, actions, expected):
                raise _differs(Reason.process_dependent,
                               f"same seed {seed} and actions gave another trajectory in another process "
                               "(set or hash order of strings, id() order)", seed, actions, expected, got, diff)
    finally:
        other.close()
    return "; the same in another process"


def _short(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 300 else text[:300] + "..."
