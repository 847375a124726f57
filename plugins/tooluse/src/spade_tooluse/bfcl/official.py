"""The installed benchmark's own multi-turn checker, run on one of our trajectories.

The checker decodes calls as text and runs them with ``eval`` in its module's globals, so
only calls that are plain ``known_function(name=literal, ...)`` are handed to it
(:func:`checkable`): a call naming no function of the entry's API classes, one with an
argument name that is not an identifier, or one with a value that is not a literal could
run arbitrary code there. In the benchmark's executor such calls change no state and yield
only error results, so leaving them out can change a verdict only for a turn whose every
call is one of them (the checker then sees an empty turn and fails it). The checker keeps API instances in its module globals by model name
and entry id; calls are serialised by a lock and each cleans up after itself.
"""

from __future__ import annotations

import keyword
import threading

from spade_core.actions import ToolCall

from .env import Trajectory
from .execution import REFUSED_NAMES, call_string, method_names, parse_call
from .loader import BfclDataError, BfclEntry

_CHECKER_LOCK = threading.Lock()


def _safe(c: ToolCall, known: set[str]) -> bool:
    if c.name not in known or c.name in REFUSED_NAMES:
        return False
    if not all(isinstance(k, str) and k.isidentifier() and not keyword.iskeyword(k) for k in c.arguments):
        return False
    try:
        name, args, kwargs = parse_call(call_string(c))
    except BfclDataError:
        return False
    return name == c.name and not args and set(kwargs) == set(c.arguments)


def checkable(entry: BfclEntry, trajectory: Trajectory) -> Trajectory:
    """``trajectory`` without the calls the checker cannot be given safely (see the module
    docstring); messages left without a call are dropped, turns are kept."""
    known = {name for class_name in entry.involved_classes for name in method_names(class_name)}
    out: Trajectory = []
    for turn in trajectory:
        steps = [[c for c in step if _safe(c, known)] for step in turn]
        out.append([s for s in steps if s])
    return out


def official_verdict(entry: BfclEntry, trajectory: Trajectory, *, tag: str) -> bool:
    """The installed benchmark's own multi-turn checker on ``trajectory`` (one list of
    messages per turn of the entry; :func:`checkable` calls only).

    ``tag`` must be unique per call: the benchmark caches API instances in its module
    globals by model name and entry id (they are removed again afterwards).
    """
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    if len(trajectory) != len(entry.ground_truth):
        raise BfclDataError(f"{entry.id}: a trajectory of {len(trajectory)} turns for an entry of "
                            f"{len(entry.ground_truth)} (the checker reads one list per turn)")
    decoded = [[[call_string(c) for c in step] for step in turn if step] for turn in checkable(entry, trajectory)]
    model_name = f"spade_{tag}"
    with _CHECKER_LOCK:
        try:
            result = multi_turn_checker(
                decoded, [list(t) for t in entry.ground_truth], entry.raw(), entry.category, model_name
            )
        finally:
            g = vars(multi_turn_utils)
            for key in [k for k in g if k.startswith(model_name)]:
                del g[key]
    return bool(result["valid"])
