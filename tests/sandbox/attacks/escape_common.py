"""What the escape attack modules share: an attack with a third expected outcome (the
guard alone) and the pool that runs it (static check off, runtime guard on)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from containment import ATTACK_LIMITS
from hostile import QUIET, Attack, Outcome

from spade_sandbox import SandboxPool


@dataclass(frozen=True)
class EscapeAttack(Attack):
    """An :class:`~hostile.Attack` with a third expected outcome: the guard alone."""

    guard: Outcome = QUIET


@pytest.fixture(scope="module")
def guard_pool() -> Iterator[SandboxPool]:
    """Static check off, runtime guard on: the guard and the OS layers contain the code."""
    with SandboxPool(ATTACK_LIMITS, unsafe_skip_static_check=True, unsafe_runtime_guard=True) as p:
        yield p


__all__ = ["EscapeAttack", "guard_pool"]
