"""Resource limits and isolation layers of a pool: one validated object.

A frozen dataclass checked in ``__post_init__`` rather than a pydantic model: the first
``gym.make`` of a stored environment builds one in a fresh interpreter, and importing
pydantic plus building the model's schema cost more there than everything else the pool
does before its zygote is ready (``bench/bench_core.py``, "import + first make"). The
pydantic-style entry points other packages use (``model_dump``, ``model_validate``) stay.

The limits a user configures (``[spade.sandbox]``: ``call_timeout_s``, ``memory_mb``,
``cpu_seconds``, ``worker_cpu_seconds``) take their defaults and bounds from
:mod:`spade_core.sandbox_settings`, their one home; a pool is built from those settings by
:class:`~spade_sandbox.launcher.SandboxLauncher`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from spade_core.sandbox_settings import LIMIT_BOUNDS, SandboxSettings, field_problems

from .errors import SandboxRequestError


class InvalidSandboxLimits(SandboxRequestError):
    """A limit out of range, of the wrong type, or unknown; the message names each one."""

    kind = "limits"


#: Field -> (type, lowest, highest, lowest is exclusive). ``None``: unbounded.
_BOUNDS: dict[str, tuple[type, float | None, float | None, bool]] = {
    **LIMIT_BOUNDS,
    "spawn_timeout_s": (float, 0, 3600, True),
    "max_open_files": (int, 8, None, False),
    "max_output_chars": (int, 16, None, False),
    "max_action_chars": (int, 1, None, False),
    "max_frame_bytes": (int, 65_536, 256 * 1024 * 1024, False),
    "max_idle_workers": (int, 0, None, False),
    "namespaces": (bool, None, None, False),
    "drop_uid": (bool, None, None, False),
    "landlock": (bool, None, None, False),
    "seccomp": (bool, None, None, False),
}


@dataclass(frozen=True, kw_only=True)
class SandboxLimits:
    """Limits applied to every worker of a :class:`~spade_sandbox.SandboxPool`.

    ``call_timeout_s`` is the wall-clock deadline of one request (a single call, or one
    batched message); ``cpu_seconds`` is the CPU time one request may use before the
    worker's own CPU-time limit fires. ``memory_mb`` bounds each worker's address space.
    The ``namespaces`` ... ``seccomp`` switches exist to measure each layer; turning one
    off weakens isolation, and the pool still refuses to run unless seccomp, or Landlock
    plus rlimits, is active (or ``allow_insecure`` is set).

    Construction checks every field (:class:`InvalidSandboxLimits` lists each problem);
    integers are accepted for the float fields, ``bool`` is not a number here.
    """

    call_timeout_s: float = SandboxSettings.call_timeout_s
    spawn_timeout_s: float = 30.0
    memory_mb: int = SandboxSettings.memory_mb
    cpu_seconds: int = SandboxSettings.cpu_seconds
    worker_cpu_seconds: int = SandboxSettings.worker_cpu_seconds
    max_open_files: int = 64
    max_output_chars: int = 65_536
    max_action_chars: int = 65_536
    #: Largest reply frame accepted from a worker, in bytes.
    max_frame_bytes: int = 128 * 1024 * 1024
    #: Workers whose instances are all closed stay warm (a new spawn of the same code
    #: skips the cold start) up to this many; the least recently idle are shut down.
    max_idle_workers: int = 64
    namespaces: bool = True
    drop_uid: bool = True
    landlock: bool = True
    seccomp: bool = True

    def __post_init__(self) -> None:
        problems = field_problems(self, _BOUNDS)
        if problems:
            raise InvalidSandboxLimits("invalid sandbox limits:\n  " + "\n  ".join(f"{n}: {m}" for n, m in problems))

    @classmethod
    def model_validate(cls, data: dict[str, Any]) -> SandboxLimits:
        """Build from plain data (for example :meth:`model_dump` output); unknown keys are
        an error."""
        if not isinstance(data, dict):
            raise InvalidSandboxLimits(f"invalid sandbox limits: expected a mapping, got {type(data).__name__}")
        unknown = sorted(set(data) - set(_BOUNDS))
        if unknown:
            raise InvalidSandboxLimits(f"invalid sandbox limits: unknown field(s) {', '.join(map(str, unknown))}")
        return cls(**data)

    def model_dump(self) -> dict[str, Any]:
        """The limits as plain data (what :meth:`model_validate` takes back)."""
        return dataclasses.asdict(self)

    def layer_options(self) -> dict[str, Any]:
        """The plain dict a worker turns into ``hardening.LayerOptions``."""
        return {
            "memory_mb": self.memory_mb,
            "cpu_seconds": self.cpu_seconds,
            "worker_cpu_seconds": self.worker_cpu_seconds,
            "max_open_files": self.max_open_files,
            "max_file_size": 0,
            "namespaces": self.namespaces,
            "drop_uid": self.drop_uid,
            "landlock": self.landlock,
            "seccomp": self.seccomp,
        }
