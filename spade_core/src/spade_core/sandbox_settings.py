"""What a user writes under ``[spade.sandbox]``: one type, one home for every default.

Every part that runs environment code (``gymnasium.make``, ``spade play``, ``spade serve``,
the TRL adapter, validation, rollouts, evaluation) receives a :class:`SandboxSettings`
loaded once at the edge; spade-sandbox's ``SandboxLauncher`` turns it into pools. A frozen
standard-library dataclass, not a pydantic model, so that the light reader
(:mod:`spade_core.run_settings`) builds it on the path of a fresh ``gymnasium.make``;
:class:`~spade_core.config.SpadeConfig` validates the same type for ``load_config``.

The limits the sandbox's ``SandboxLimits`` shares with it (``call_timeout_s``,
``memory_mb``, ``cpu_seconds``, ``worker_cpu_seconds``) take their defaults and bounds from
here (:data:`LIMIT_BOUNDS`, :func:`field_problems`). Standard library only.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

#: Field -> (type, lowest, highest, lowest is exclusive); ``None``: unbounded. The limits a
#: pool's ``SandboxLimits`` shares with the settings, checked the same way in both.
LIMIT_BOUNDS: dict[str, tuple[type, float | None, float | None, bool]] = {
    "call_timeout_s": (float, 0, 3600, True),
    "memory_mb": (int, 32, 1_048_576, False),
    "cpu_seconds": (int, 1, None, False),
    "worker_cpu_seconds": (int, 1, None, False),
}

_BOUNDS: dict[str, tuple[type, float | None, float | None, bool]] = {
    "backend": (str, None, None, False),
    "allow_insecure": (bool, None, None, False),
    **LIMIT_BOUNDS,
}


class InvalidSandboxSettings(ValueError):
    """A sandbox setting out of range, of the wrong type, or unknown. ``problems`` holds one
    ``(field, message)`` pair per bad field."""

    def __init__(self, problems: list[tuple[str, str]], what: str = "sandbox settings") -> None:
        super().__init__(f"invalid {what}:\n  " + "\n  ".join(f"{name}: {msg}" for name, msg in problems))
        self.problems = problems


def field_problems(obj: Any, bounds: dict[str, tuple[type, float | None, float | None, bool]]) -> list[tuple[str, str]]:
    """``(field, message)`` for each field of the frozen dataclass ``obj`` that breaks its
    entry in ``bounds``. Integers are accepted for float fields (and stored as floats);
    ``bool`` is not a number here."""
    problems = []
    for name, (kind, low, high, open_low) in bounds.items():
        value = getattr(obj, name)
        if kind is bool or kind is str:
            if type(value) is not kind:
                problems.append((name, f"expected {'true or false' if kind is bool else 'a string'}, got {value!r}"))
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
            problems.append((name, f"expected {'a number' if kind is float else 'an integer'}, got {value!r}"))
            continue
        if kind is float:
            value = float(value)
            if not math.isfinite(value):
                problems.append((name, f"expected a finite number, got {value!r}"))
                continue
            object.__setattr__(obj, name, value)
        if low is not None and (value <= low if open_low else value < low):
            problems.append((name, f"must be {'greater than' if open_low else 'at least'} {low} (got {value!r})"))
        elif high is not None and value > high:
            problems.append((name, f"must be at most {high} (got {value!r})"))
    return problems


@dataclass(frozen=True, kw_only=True)
class SandboxSettings:
    """The ``[spade.sandbox]`` table: where and under which limits environment code runs.

    Construction checks every field (:class:`InvalidSandboxSettings` lists each problem).
    """

    #: Unknown keys are an error when pydantic validates this type inside ``SpadeConfig``.
    __pydantic_config__ = {"extra": "forbid"}

    #: A backend registered through ``spade_register_sandbox_backends`` (``spade sandbox check``).
    backend: str = "native"
    #: Run untrusted code even when no OS isolation layer is active (not recommended).
    allow_insecure: bool = False
    #: Wall-clock deadline of one call into an environment.
    call_timeout_s: float = 10.0
    #: Address space of each worker process.
    memory_mb: int = 512
    #: CPU seconds one call may use.
    cpu_seconds: int = 60
    #: CPU seconds one worker may use over its life (the hard CPU limit; at least cpu_seconds).
    worker_cpu_seconds: int = 3600

    def __post_init__(self) -> None:
        problems = field_problems(self, _BOUNDS)
        if problems:
            raise InvalidSandboxSettings(problems)

    @classmethod
    def from_table(cls, table: dict[str, Any]) -> SandboxSettings:
        """From a parsed ``[spade.sandbox]`` table; unknown keys are problems too."""
        unknown = sorted(set(table) - set(_BOUNDS))
        if unknown:
            raise InvalidSandboxSettings([(str(name), "unknown setting") for name in unknown])
        return cls(**table)

    def override(self, **changes: Any) -> SandboxSettings:
        """A copy with ``changes`` applied; a change of ``None`` keeps the value here."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    def as_table(self) -> dict[str, Any]:
        """The settings as a ``[spade.sandbox]`` table (what :meth:`from_table` takes)."""
        return dataclasses.asdict(self)
