"""The processes of a launch: per-rank collection seeds and the fingerprint of a process's
random generators (the multi-process run itself is in test_multiprocess.py)."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from spade_trainer.errors import TrainerError
from spade_trainer.ranks import (
    RANK_SEED_STRIDE,
    RANK_VARIABLES,
    SIZE_VARIABLES,
    collection_seed,
    process_rank,
    rng_digest,
)

seeds = st.integers(min_value=0, max_value=2**31)
iterations = st.integers(min_value=1, max_value=RANK_SEED_STRIDE - 1)
ranks = st.integers(min_value=0, max_value=255)


@given(seeds, iterations)
def test_rank_0_keeps_the_single_process_seeds(seed: int, iteration: int) -> None:
    assert collection_seed(seed, iteration) == collection_seed(seed, iteration, 0) == seed * 100_003 + iteration


@given(seeds, st.tuples(iterations, ranks), st.tuples(iterations, ranks))
def test_no_two_collections_of_a_run_share_a_seed(seed: int, a: tuple[int, int], b: tuple[int, int]) -> None:
    assert (collection_seed(seed, *a) == collection_seed(seed, *b)) == (a == b)


def _set_generators(n: int) -> None:
    torch.manual_seed(n)
    random.seed(n)
    np.random.seed(n)


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_the_digest_is_a_function_of_the_generators_state(n: int) -> None:
    _set_generators(n)
    first = rng_digest()
    assert rng_digest() == first  # reading the state does not consume it
    _set_generators(n)
    assert rng_digest() == first


def test_the_digest_sees_each_generator_move() -> None:
    for draw in (lambda: torch.rand(1), lambda: random.random(), lambda: np.random.rand()):
        _set_generators(7)
        before = rng_digest()
        draw()
        assert rng_digest() != before


@pytest.fixture()
def no_launcher(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in RANK_VARIABLES + SIZE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_an_mpi_launch_gives_each_process_its_rank(no_launcher: pytest.MonkeyPatch) -> None:
    # accelerate's multi-CPU launch through mpirun sets RANK only when its state is built,
    # after the run has chosen its folder: the MPI variables must be read directly
    no_launcher.setenv("OMPI_COMM_WORLD_RANK", "1")
    no_launcher.setenv("OMPI_COMM_WORLD_SIZE", "2")
    assert process_rank() == (1, 2)
    no_launcher.setenv("RANK", "0")  # torchrun's variables come first
    no_launcher.setenv("WORLD_SIZE", "2")
    assert process_rank() == (0, 2)


@pytest.mark.parametrize(("rank", "size", "match"), [
    ("one", "2", "RANK='one' is not an integer"),
    ("0", "two", "WORLD_SIZE='two' is not an integer"),
    ("2", "2", "rank 2 .* world of 2"),
    ("-1", "2", "rank -1"),
    ("0", "0", "world of 0"),
])
def test_broken_launcher_settings_are_named(no_launcher: pytest.MonkeyPatch, rank: str, size: str, match: str) -> None:
    no_launcher.setenv("RANK", rank)
    no_launcher.setenv("WORLD_SIZE", size)
    with pytest.raises(TrainerError, match=match):
        process_rank()
