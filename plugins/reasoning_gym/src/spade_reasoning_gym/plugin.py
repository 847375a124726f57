"""Registers the ``reasoning_gym`` and ``reasoning_gym_hard`` evaluation suites."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spade_core.hookspecs import hookimpl


@hookimpl
def spade_register_eval_suites(register: Callable[[Any], None]) -> None:
    from .hard import SUITE as HARD_SUITE
    from .suite import SUITE

    register(SUITE)
    register(HARD_SUITE)
