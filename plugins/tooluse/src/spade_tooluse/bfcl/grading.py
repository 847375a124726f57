"""The benchmark's multi-turn checker, restated turn by turn (what :class:`BfclEnv` grades with).

At the end of a user turn, the turn's ground-truth calls run on a second, answer-driven
set of instances; when that list is not empty, the turn passes if the agent made at least
one call in it, every public attribute of every answer-driven instance equals the
agent-driven one, and every ground-truth result of the turn is found (as a multiset, in
any order) among all results the agent obtained so far. Agreement with the installed
checker (:mod:`.official`) is measured by :mod:`.selfcheck` on mutated trajectories.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .execution import ApiSet

_MISSING = object()


def state_differences(agent: ApiSet, truth: ApiSet) -> dict[str, list[str]]:
    """Per class, the public attributes where the agent's instance differs from the answer's."""
    out: dict[str, list[str]] = {}
    for class_name, t in truth.instances.items():
        a = agent.instances[class_name]
        bad = [k for k, v in vars(t).items() if not k.startswith("_") and getattr(a, k, _MISSING) != v]
        if bad:
            out[class_name] = bad
    return out


def missing_results(expected: Sequence[str], observed: Sequence[str]) -> list[str]:
    """Items of ``expected`` not matched one-for-one by items of ``observed`` (any order)."""
    pool = list(observed)
    missing = []
    for item in expected:
        try:
            pool.remove(item)
        except ValueError:
            missing.append(item)
    return missing


@dataclass
class TurnVerdict:
    """The grade of one user turn."""

    index: int
    graded: bool
    passed: bool
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"turn": self.index, "graded": self.graded, "passed": self.passed, "reason": self.reason}


def grade_turn(agent: ApiSet, truth: ApiSet, truth_calls: Sequence[str], *, index: int, calling_steps: int,
               results: Sequence[str]) -> TurnVerdict:
    """Run turn ``index``'s ground truth on ``truth`` and grade the agent's instances and
    ``results`` (every result it obtained so far) against it."""
    expected = [truth.execute(truth.to_tool_call(t)) for t in truth_calls]
    if not truth_calls:
        return TurnVerdict(index, graded=False, passed=True)
    if calling_steps == 0:
        return TurnVerdict(index, True, False, "no function call in a turn that needs one")
    diff = state_differences(agent, truth)
    if diff:
        where = "; ".join(f"{c}: {', '.join(attrs)}" for c, attrs in diff.items())
        return TurnVerdict(index, True, False, f"state differs from the answer's ({where})")
    missing = missing_results(expected, results)
    if missing:
        return TurnVerdict(index, True, False, f"{len(missing)} expected result(s) not obtained")
    return TurnVerdict(index, True, True)
