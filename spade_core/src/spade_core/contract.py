"""The environment contract's checks on the values an environment returns: their one home.

Four places check what environment code returned, each for a reason of its own, and all
four apply the rules written here so that an environment meets the same contract wherever
it runs:

* :mod:`spade_core.env` (``check_reset_result`` / ``check_step_result``): values returned
  in this process (``ReferenceEnvAdapter``, the trainer's in-process runner);
* the sandbox's worker (``spade_sandbox.worker``), before it converts a value for the wire;
* the sandbox's pool (``spade_sandbox.replies``), on the decoded reply of a worker, which is
  untrusted;
* spade-designer's validation (``spade_designer.validation.runner``), on what any runner
  returned, each violation a finding whose reason code its message tells.

Each check takes ``error``, the exception class its caller raises, called as
``error(message, method=...)`` (:class:`spade_core.errors.EnvContractError` here, the
sandbox's ``EnvContractViolation`` in the pool, the worker's own in the worker, a
validation ``Rejection`` in the designer), and returns the value as the contract has it (a
``None`` info as ``{}``, a reward as ``float``, a flag as ``bool``).

The messages never call a method of the value beyond its type's name and the ``repr`` of
a builtin scalar: in the worker the value comes from untrusted code, whose ``__repr__``
could be anything.

Standard library only, and it imports nothing else of ``spade_core``: the sandbox's
workers load this module without running ``spade_core``'s package initialiser (which
registers every environment; see ``spade_sandbox.core_rules``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

#: Longest observation (and solution text) the contract admits, in characters.
MAX_TEXT_LENGTH = 65_536

#: The exception a check raises: ``error(message, method=...)``.
ErrorClass = Callable[..., Exception]

_SCALARS = (int, float, str, bytes, type(None))


def describe_shape(value: Any) -> str:
    """What a value looks like, for contract messages: ``str``, ``a 4-tuple (str, float, bool, dict)``."""
    if isinstance(value, tuple):
        return "a {}-tuple ({})".format(len(value), ", ".join(type(v).__name__ for v in value))
    return type(value).__name__


def _shown(value: Any) -> str:
    """``name=value`` for a builtin scalar (its repr, cut to 40 characters), else nothing:
    a message may show what came back but must not run the environment's own ``__repr__``."""
    if type(value) in _SCALARS:
        text = repr(value)
        return "=" + (text if len(text) <= 40 else text[:37] + "...")
    return ""


def reset_pair(result: Any, error: ErrorClass) -> tuple[Any, Any]:
    """``reset`` returns exactly ``(observation, info)``. A bare observation (the old Gym
    ``reset``) is a violation, not something to repair: the reference implementation's
    own check rejects it too."""
    if not isinstance(result, tuple) or tuple.__len__(result) != 2:
        raise error(
            f"reset() returned {describe_shape(result)}; expected the pair (observation: str, info: dict)",
            method="reset",
        )
    return result


def step_tuple(result: Any, error: ErrorClass) -> tuple[Any, Any, Any, Any, Any]:
    """``step`` returns exactly ``(observation, reward, terminated, truncated, info)``. The
    old Gym 4-tuple ``(obs, reward, done, info)`` is a violation, named as such (its
    ``done`` cannot say whether the task ended or was cut off)."""
    if not isinstance(result, tuple) or tuple.__len__(result) != 5:
        old = (
            " (the old Gym API's (observation, reward, done, info))"
            if isinstance(result, tuple) and tuple.__len__(result) == 4
            else ""
        )
        raise error(
            f"step() returned {describe_shape(result)}{old}; expected "
            "(observation, reward, terminated, truncated, info)",
            method="step",
        )
    return result


def observation(value: Any, method: str, error: ErrorClass, limit: int = MAX_TEXT_LENGTH) -> str:
    """A ``str`` of at most ``limit`` characters (its real length: a subclass's
    ``__len__`` may lie)."""
    if not isinstance(value, str):
        raise error(f"{method}() returned an observation of type {type(value).__name__}, expected str", method=method)
    size = str.__len__(value)
    if size > limit:
        raise error(f"{method}() returned an observation of {size} characters (limit {limit})", method=method)
    return value


def info(value: Any, method: str, error: ErrorClass) -> dict[str, Any]:
    """A ``dict``; ``None`` stands for ``{}``. (How large an info may be is the sandbox's
    limit on what crosses its boundary, not part of the contract.)"""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise error(f"{method}() returned info of type {type(value).__name__}, expected dict", method=method)
    return value


def reward(value: Any, error: ErrorClass) -> float:
    """A finite number as ``float``: not a ``bool``, and not a string that ``float()``
    would happen to parse; ints and numeric objects (``Fraction``, ``Decimal``, numpy
    scalars) are converted."""
    if type(value) is not float:
        if isinstance(value, bool) or not hasattr(type(value), "__float__"):
            raise error(f"step() returned a reward of type {type(value).__name__}, expected a number", method="step")
        try:
            value = float(value)
        except Exception:
            raise error(
                f"step() returned a reward of type {type(value).__name__} that is not convertible to float",
                method="step",
            ) from None
    if not math.isfinite(value):
        raise error(f"step() returned a non-finite reward {value!r}", method="step")
    return value


def reward_in_range(value: float, reward_range: tuple[float, float], error: ErrorClass) -> float:
    """``value`` within the declared ``reward_range`` (inclusive, 1e-9 of slack)."""
    lo, hi = reward_range
    if not lo - 1e-9 <= value <= hi + 1e-9:
        raise error(f"step() returned reward {value} outside the declared range [{lo}, {hi}]", method="step")
    return value


def flag(value: Any, name: str, error: ErrorClass) -> bool:
    """``terminated`` / ``truncated``: a real ``bool`` (or numpy's ``bool_``, as
    ``bool``). A truthy int, string or ``None`` hides a bug in the environment (``done =
    1`` for "one turn left"), and Gymnasium's ``check_env`` requires a plain bool."""
    if value is True or value is False:
        return value
    numpy = sys.modules.get("numpy")  # only an environment that imported numpy can return its bool
    if numpy is not None and type(value) is getattr(numpy, "bool_", None):
        return bool(value)
    raise error(f"step() returned {name}{_shown(value)} of type {type(value).__name__}, expected bool", method="step")


def solution(value: Any, error: ErrorClass, limit: int = MAX_TEXT_LENGTH) -> list[str] | str:
    """A list of ``str`` actions (a tuple is taken as one), at most ``limit`` of them and
    ``limit`` characters in all, or one text of at most ``limit`` characters."""
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, list):
        if not all(isinstance(a, str) for a in value):
            raise error("solution() list must contain only str actions", method="solution")
        if list.__len__(value) > limit:
            raise error(f"solution() has {list.__len__(value)} actions (limit {limit})", method="solution")
        if sum(map(str.__len__, value)) > limit:
            raise error(f"solution() is longer than {limit} characters", method="solution")
        return value
    if isinstance(value, str):
        return observation(value, "solution", error, limit)
    raise error(f"solution() returned {type(value).__name__}; expected list[str] or str", method="solution")


def tool_schemas(value: Any, error: ErrorClass) -> list[Any]:
    """A list of dicts (a tuple is taken as one); ``None`` stands for no tools."""
    if value is None:
        return []
    if not isinstance(value, (list, tuple)) or not all(isinstance(s, dict) for s in value):
        raise error("get_tool_schemas() must return a list of dicts", method="get_tool_schemas")
    return list(value)
