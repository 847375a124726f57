"""What a caller hands the pool and gets back: instance handles, worker descriptions, and
the check of a seed (shared by the single calls and the batches)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import SandboxRequestError

#: The seeds a worker accepts (what msgpack carries as an integer).
SEED_RANGE = (-(2**63), 2**64 - 1)


@dataclass(frozen=True)
class EnvHandle:
    """An environment instance living in a worker. Cheap to copy; meaningful only to the
    pool that returned it."""

    worker_id: int
    instance_id: int
    code_hash: str
    class_name: str

    def __repr__(self) -> str:
        return f"EnvHandle({self.class_name}@{self.code_hash[:8]}, worker={self.worker_id}, instance={self.instance_id})"


@dataclass(frozen=True)
class WorkerInfo:
    """What the pool knows about one live worker (for status, tests and benchmarks)."""

    worker_id: int
    pid: int
    class_name: str
    code_hash: str
    instances: int
    layers: tuple[str, ...]


def same_handles(handles: list[Any], previous: list[EnvHandle]) -> bool:
    """``handles == previous``, False where an element's comparison fails."""
    try:
        return handles == previous
    except Exception:  # an object whose == does not give a bool
        return False


def check_seed(seed: Any) -> None:
    if seed is None:
        return
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise SandboxRequestError(f"seed must be an int or None, got {type(seed).__name__}")
    if not SEED_RANGE[0] <= seed <= SEED_RANGE[1]:
        raise SandboxRequestError(f"seed {seed} does not fit in 64 bits")
