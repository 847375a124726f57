"""The processes of a launch: per-rank collection seeds and the fingerprint of a process's
random generators (the multi-process run itself is in test_multiprocess.py)."""

from __future__ import annotations

import random

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from spade_trainer.launch import RANK_SEED_STRIDE, collection_seed, rng_digest

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
