"""Per-phase torch threads: ``"auto"`` uses every core only when the neighbours are idle."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from spade_trainer.config import ModelSettings
from spade_trainer.threads import IDLE_NEIGHBOURS, apply_threads, auto_threads


def test_an_idle_machine_gets_every_core() -> None:
    # our own single thread is the whole load
    assert auto_threads(1.0, own_threads=1, cores=2) == 2
    assert auto_threads(2.1, own_threads=2, cores=2) == 2


def test_a_busy_neighbour_gets_us_down_to_one_thread() -> None:
    assert auto_threads(2.0, own_threads=1, cores=2) == 1
    assert auto_threads(6.0, own_threads=2, cores=2) == 1


@given(
    load=st.floats(min_value=0, max_value=64, allow_nan=False),
    own=st.integers(min_value=1, max_value=8),
    cores=st.integers(min_value=1, max_value=8),
)
def test_auto_is_one_thread_or_every_core_by_the_neighbours_load(load: float, own: int, cores: int) -> None:
    got = auto_threads(load, own, cores)
    assert got == (cores if load - own < IDLE_NEIGHBOURS else 1)


def test_apply_sets_an_explicit_count_and_leaves_none_alone() -> None:
    before = torch.get_num_threads()
    try:
        assert apply_threads(None) is None
        assert torch.get_num_threads() == before
        assert apply_threads(1) == 1
        assert torch.get_num_threads() == 1
        got = apply_threads("auto")
        assert got in (1, torch.get_num_threads()) and torch.get_num_threads() == got
    finally:
        torch.set_num_threads(before)


def test_the_setting_accepts_a_count_auto_or_none_and_nothing_else() -> None:
    assert ModelSettings(threads="auto").threads == "auto"
    assert ModelSettings(threads=2).threads == 2
    assert ModelSettings().threads is None
    for bad in (0, -1, "many"):
        with pytest.raises(ValidationError):
            ModelSettings(threads=bad)
