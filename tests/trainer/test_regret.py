"""Specification of regret estimation."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from spade_trainer.errors import RewardError
from spade_trainer.regret import RegretEstimate, RegretEstimator, regret_from_returns
from spade_trainer.rollout import Episode, EpisodeSpec, PlayableEnv

returns = st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=1, max_size=32)


@given(returns, returns)
def test_regret_is_the_floored_difference_of_mean_returns(h: list[float], u: list[float]) -> None:
    expected = max(0.0, math.fsum(h) / len(h) - math.fsum(u) / len(u))
    assert regret_from_returns(h, u) == pytest.approx(expected)


@given(returns, returns)
def test_regret_is_never_negative(h: list[float], u: list[float]) -> None:
    assert regret_from_returns(h, u) >= 0.0


@given(returns)
def test_a_hint_that_does_not_help_gives_zero_regret(u: list[float]) -> None:
    assert regret_from_returns(u, u) == 0.0


def test_regret_needs_plays_of_both_kinds() -> None:
    with pytest.raises(RewardError, match="hinted returns is empty"):
        regret_from_returns([], [1.0])


def test_returns_outside_unit_interval_are_rejected() -> None:
    with pytest.raises(RewardError, match="lie in"):
        regret_from_returns([1.5], [0.0])


def test_estimate_reports_unhinted_win_rate_and_store_stats() -> None:
    est = RegretEstimate("e-v1", (1.0, 1.0, 1.0, 0.0), (1.0, 0.0, 0.0, -0.5))
    assert est.regret == pytest.approx(0.75 - 0.125)
    assert est.win_rate == 0.25 and est.hinted_win_rate == 0.75
    snap = est.stats("step-3")
    assert snap.samples == 8 and snap.regret == pytest.approx(est.regret) and snap.win_rate == 0.25


ENV = PlayableEnv("a-v1", "class AEnv: pass", "games", hint="go left")
OTHER = PlayableEnv("b-v1", "class BEnv: pass", "games", hint="go right")


class _NoEngine:
    pass


@given(st.integers(1, 8), st.integers(0, 1000))
def test_plan_pairs_k_hinted_and_k_unhinted_plays_on_the_same_seeds(k: int, seed: int) -> None:
    plan = RegretEstimator(_NoEngine(), k).plan([ENV, OTHER], seed=seed)  # type: ignore[arg-type]
    for env in (ENV, OTHER):
        hinted = sorted(s.seed for s in plan if s.env is env and s.hinted)
        unhinted = sorted(s.seed for s in plan if s.env is env and not s.hinted)
        assert len(hinted) == k and hinted == unhinted
    assert len({(s.env.env_id, s.seed, s.hinted) for s in plan}) == len(plan) == 4 * k


def test_every_environment_needs_a_hint() -> None:
    with pytest.raises(RewardError, match="no hint"):
        RegretEstimator(_NoEngine(), 2).plan([PlayableEnv("c-v1", "", "games")])  # type: ignore[arg-type]


def test_k_must_be_positive() -> None:
    with pytest.raises(RewardError, match="K"):
        RegretEstimator(_NoEngine(), 0)  # type: ignore[arg-type]


def _played(env: PlayableEnv, hinted: bool, last: float, terminated: bool = True) -> Episode:
    ep = Episode(spec=EpisodeSpec(env, hinted, 0))
    ep.rewards, ep.terminated, ep.done = [last], terminated, True
    return ep


def test_summarise_groups_episodes_by_environment() -> None:
    eps = [_played(ENV, True, 1.0), _played(ENV, False, 0.2), _played(OTHER, True, 0.5), _played(OTHER, False, 0.9)]
    a, b = RegretEstimator.summarise([ENV, OTHER], eps)
    assert (a.env_id, a.regret) == ("a-v1", pytest.approx(0.8))
    assert (b.env_id, b.regret) == ("b-v1", 0.0)
