"""Registers the ``reasoning_gym`` evaluation suite."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spade_core.hookspecs import hookimpl


@hookimpl
def spade_register_eval_suites(register: Callable[[Any], None]) -> None:
    from .suite import SUITE

    register(SUITE)
