"""Resource limits and isolation layers of a pool: one validated object."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class SandboxLimits(BaseModel):
    """Limits applied to every worker of a :class:`~spade_sandbox.SandboxPool`.

    ``call_timeout_s`` is the wall-clock deadline of one request (a single call, or one
    batched message); ``cpu_seconds`` is the CPU time one request may use before the
    worker's own CPU-time limit fires. ``memory_mb`` bounds each worker's address space.
    The ``namespaces`` ... ``seccomp`` switches exist to measure each layer; turning one
    off weakens isolation, and the pool still refuses to run unless seccomp, or Landlock
    plus rlimits, is active (or ``allow_insecure`` is set).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    call_timeout_s: float = Field(default=10.0, gt=0, le=3600)
    spawn_timeout_s: float = Field(default=30.0, gt=0, le=3600)
    memory_mb: int = Field(default=512, ge=32, le=1_048_576)
    cpu_seconds: int = Field(default=60, ge=1)
    max_open_files: int = Field(default=64, ge=8)
    max_output_chars: int = Field(default=65_536, ge=16)
    max_action_chars: int = Field(default=65_536, ge=1)
    #: Largest reply frame accepted from a worker, in bytes.
    max_frame_bytes: int = Field(default=128 * 1024 * 1024, ge=65_536, le=256 * 1024 * 1024)
    #: Workers whose instances are all closed stay warm (a new spawn of the same code
    #: skips the cold start) up to this many; the least recently idle are shut down.
    max_idle_workers: int = Field(default=64, ge=0)
    namespaces: bool = True
    drop_uid: bool = True
    landlock: bool = True
    seccomp: bool = True

    def layer_options(self) -> dict[str, Any]:
        """The plain dict a worker turns into ``hardening.LayerOptions``."""
        return {
            "memory_mb": self.memory_mb,
            "cpu_seconds": self.cpu_seconds,
            "max_open_files": self.max_open_files,
            "max_file_size": 0,
            "namespaces": self.namespaces,
            "drop_uid": self.drop_uid,
            "landlock": self.landlock,
            "seccomp": self.seccomp,
        }
