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
    est = RegretEstimate("e-v1", (1.0, 1.0, 1.0, 0.0), (1.0, 0.0, 0.5, -0.5))
    assert est.regret == pytest.approx(0.75 - 0.25)
    # the reference's win rate: the mean unhinted return (clipped to [0, 1]), not the share of wins
    assert est.win_rate == pytest.approx(0.25) and est.solve_rate == 0.25 and est.hinted_win_rate == 0.75
    snap = est.stats("step-3")
    assert snap.samples == 8 and snap.regret == pytest.approx(est.regret) and snap.win_rate == pytest.approx(0.25)


def test_an_environment_that_always_returns_half_has_win_rate_half() -> None:
    est = RegretEstimate("e-v1", (0.5,) * 4, (0.5,) * 4)
    assert est.win_rate == 0.5 and est.solve_rate == 0.0


@given(st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=1, max_size=16))
def test_the_win_rate_is_the_clipped_mean_return(u: list[float]) -> None:
    est = RegretEstimate("e-v1", (0.0,), tuple(u))
    assert est.win_rate == pytest.approx(max(0.0, min(1.0, math.fsum(u) / len(u))))


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


def _broken(env: PlayableEnv, hinted: bool, *, hung: bool) -> Episode:
    ep = Episode(spec=EpisodeSpec(env, hinted, 0))
    ep.done, ep.hung, ep.error = True, hung, "SandboxTimeout: step" if hung else "ValueError: boom"
    return ep


def test_failed_and_hung_plays_are_dropped_from_the_means() -> None:
    # 16 hinted and 16 unhinted plays, all returning 0, except 4 unhinted that hung and 2 that
    # failed: the hint does not help, so the regret stays 0 (the -0.5 of a hang is no return)
    eps = [_played(ENV, True, 0.0) for _ in range(16)] + [_played(ENV, False, 0.0) for _ in range(10)]
    eps += [_broken(ENV, False, hung=True) for _ in range(4)] + [_broken(ENV, False, hung=False) for _ in range(2)]
    (est,) = RegretEstimator.summarise([ENV], eps)
    assert est.regret == 0.0 and est.win_rate == 0.0
    assert len(est.unhinted_returns) == 10 and (est.hung, est.failed) == (4, 2)
    assert est.stats("s").samples == 26


def test_an_environment_without_usable_plays_of_one_kind_is_not_measured() -> None:
    eps = [_played(ENV, True, 1.0), _broken(ENV, False, hung=True)]
    (est,) = RegretEstimator.summarise([ENV], eps)
    assert not est.measured and est.hung == 1
    with pytest.raises(RewardError, match="empty"):
        _ = est.regret
