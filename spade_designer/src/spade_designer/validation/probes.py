r"""Fixed probe actions shared by the deterministic stages (no randomness: a report must
be reproducible from its inputs).

* garbage — actions no sensible environment should reward;
* commands — generic, plausible ``\boxed{...}`` commands and tool calls;
* magic — actions that try to claim success instead of earning it (reward-hacking probes).
"""

from __future__ import annotations

from spade_core.actions import ToolCall, format_boxed, format_tool_calls

from .context import Run

GARBAGE: tuple[str, ...] = (
    "",
    "hello",
    "\\boxed{}",
    "\\boxed{asdf qwerty}",
    "zzzz ~~~ 1234",
    "<tool_call>{not json</tool_call>",
)

COMMANDS: tuple[str, ...] = tuple(
    format_boxed(c)
    for c in (
        "look",
        "help",
        "status",
        "1",
        "2",
        "A",
        "left",
        "up",
        "take key",
        "move 1 2",
        "guess 5",
        "push",
    )
) + (
    format_tool_calls([ToolCall("search", {"query": "x"})]),
    "<answer>42</answer>",
)

MAGIC: tuple[str, ...] = (
    "\\boxed{solve}",
    "\\boxed{solved}",
    "\\boxed{win}",
    "\\boxed{I win}",
    "\\boxed{done}",
    "\\boxed{submit}",
    "\\boxed{correct}",
    "\\boxed{answer}",
    "\\boxed{success}",
    "<answer>solve</answer>",
)


def garbage(run: Run) -> list[str]:
    extra = list(run.domain.garbage_actions) if run.domain is not None else []
    return _unique(extra + list(GARBAGE))


def solution_firsts(run: Run, seed: int) -> list[str]:
    """The first action of every action sequence ``solution()`` spells out on ``seed`` (its
    list, or the readings of its string): actions known to be well-formed."""
    return _unique([plan[0] for plan in run.solution_plans(seed) if plan])


def first_actions(run: Run, seed: int) -> list[str]:
    """Distinct probes: the solution's first actions, fuzz actions, commands, garbage."""
    out: list[str] = solution_firsts(run, seed)
    out += run.fuzz_actions[: run.config.probe_actions]
    out += list(COMMANDS)
    out += garbage(run)
    return _unique(out)


def mixed_sequence(run: Run, seed: int, length: int) -> list[str]:
    """A deterministic action sequence mixing the solution with commands and garbage."""
    plans = run.solution_plans(seed)
    base = list(plans[0]) if plans else []
    pool = _unique(run.fuzz_actions[: run.config.probe_actions] + list(COMMANDS) + list(GARBAGE))
    seq: list[str] = []
    i = 0
    while len(seq) < length:
        seq.append(pool[i % len(pool)])
        if i < len(base):
            seq.append(base[i])
        i += 1
    return seq[:length]


def _unique(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for a in items:
        if a not in seen:
            seen.add(a)
            out.append(a)
    return out
