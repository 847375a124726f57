"""Specification of the reward functions of both roles."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from spade_core.returns import is_win
from spade_trainer.errors import RewardError
from spade_trainer.rewards import (
    HUNG_STEP_PENALTY,
    DesignerRewardSpec,
    DesignerRewardVariant,
    Plateau,
    centre_by_group,
    designer_reward,
    episode_return,
    learning_potential,
    normalise_by_group,
    plateau,
)

rates = st.floats(0.0, 1.0, allow_nan=False)
regrets = st.floats(0.0, 2.0, allow_nan=False)
finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


class TestEpisodeReturn:
    @given(finite)
    def test_terminated_return_is_the_last_reward_clipped_to_unit_interval(self, r: float) -> None:
        assert episode_return(r, True) == min(1.0, max(-1.0, r))

    @given(finite)
    def test_an_episode_cut_from_outside_scores_zero(self, r: float) -> None:
        assert episode_return(r, False) == 0.0

    @given(st.none() | finite, st.booleans())
    def test_a_hung_step_costs_the_penalty_whatever_else_happened(self, r: float | None, term: bool) -> None:
        assert episode_return(r, term, hung=True) == HUNG_STEP_PENALTY == -0.5

    def test_no_step_at_all_scores_zero(self) -> None:
        assert episode_return(None, True) == 0.0

    @pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
    def test_non_finite_reward_is_rejected(self, bad: float) -> None:
        with pytest.raises(RewardError, match="finite"):
            episode_return(bad, True)

    def test_only_full_reward_is_a_win(self) -> None:
        assert is_win(1.0) and not is_win(0.99) and not is_win(-0.5)


class TestPlateau:
    @given(rates)
    def test_plateau_lies_in_unit_interval(self, p: float) -> None:
        assert 0.0 <= plateau(p) <= 1.0

    @given(st.floats(0.4, 0.6))
    def test_plateau_is_one_on_the_band(self, p: float) -> None:
        assert plateau(p) == 1.0

    @given(st.floats(0.0, 0.15) | st.floats(0.85, 1.0))
    def test_plateau_is_zero_outside_the_edges(self, p: float) -> None:
        assert plateau(p) == 0.0

    @pytest.mark.parametrize("p,expected", [(0.275, 0.5), (0.725, 0.5), (0.2, 0.2), (0.8, 0.2)])
    def test_plateau_falls_linearly(self, p: float, expected: float) -> None:
        assert plateau(p) == pytest.approx(expected)

    @given(rates, rates)
    def test_plateau_rises_below_the_band_and_falls_above(self, a: float, b: float) -> None:
        lo, hi = sorted((a, b))
        if hi <= 0.4:
            assert plateau(lo) <= plateau(hi)
        if lo >= 0.6:
            assert plateau(lo) >= plateau(hi)

    @pytest.mark.parametrize("p", [-0.01, 1.01, math.nan])
    def test_win_rate_outside_unit_interval_is_rejected(self, p: float) -> None:
        with pytest.raises(RewardError):
            plateau(p)

    def test_misordered_plateau_is_rejected(self) -> None:
        with pytest.raises(RewardError, match="plateau needs"):
            Plateau(low=0.5, band_low=0.4)


class TestDesignerReward:
    @given(regrets, rates)
    def test_blend_matches_the_released_recipe(self, r: float, p: float) -> None:
        expected = 0.4 * min(1.0, max(0.0, r / 0.15)) + 0.6 * plateau(p)
        assert designer_reward(r, p) == pytest.approx(expected)

    @given(regrets, rates)
    def test_blend_lies_in_unit_interval(self, r: float, p: float) -> None:
        assert 0.0 <= designer_reward(r, p) <= 1.0 + 1e-12

    @given(regrets, regrets, rates)
    def test_blend_never_decreases_with_regret(self, a: float, b: float, p: float) -> None:
        lo, hi = sorted((a, b))
        assert designer_reward(lo, p) <= designer_reward(hi, p)

    @given(regrets, rates)
    def test_pure_regret_is_the_regret(self, r: float, p: float) -> None:
        spec = DesignerRewardSpec(variant=DesignerRewardVariant.regret)
        assert designer_reward(r, p, spec) == r

    @given(regrets, rates)
    def test_learning_potential_ignores_regret_and_peaks_at_half(self, r: float, p: float) -> None:
        spec = DesignerRewardSpec(variant=DesignerRewardVariant.learning_potential)
        value = designer_reward(r, p, spec)
        assert value == learning_potential(p) and 0.0 <= value <= learning_potential(0.5) == 1.0

    def test_learning_potential_is_zero_for_always_or_never_solved(self) -> None:
        assert learning_potential(0.0) == learning_potential(1.0) == 0.0

    @pytest.mark.parametrize("variant", list(DesignerRewardVariant))
    def test_an_invalid_environment_gets_the_invalid_base_reward(self, variant: DesignerRewardVariant) -> None:
        assert designer_reward(None, None, DesignerRewardSpec(variant=variant, invalid_reward=-0.25)) == -0.25

    def test_negative_regret_is_rejected(self) -> None:
        with pytest.raises(RewardError, match="floored"):
            designer_reward(-0.1, 0.5)

    def test_zero_regret_scale_is_rejected(self) -> None:
        with pytest.raises(RewardError, match="regret_scale"):
            DesignerRewardSpec(regret_scale=0.0)


groups_and_values = st.lists(st.tuples(st.sampled_from("abc"), finite), min_size=1, max_size=30)


class TestAdvantages:
    @given(groups_and_values)
    def test_designer_advantages_sum_to_zero_within_each_skill(self, items: list[tuple[str, float]]) -> None:
        keys, values = [k for k, _ in items], [v for _, v in items]
        adv = centre_by_group(values, keys)
        for k in set(keys):
            members = [a for a, g in zip(adv, keys, strict=True) if g == k]
            assert abs(math.fsum(members)) <= 1e-9 * max(1.0, max(abs(v) for v in values)) * len(members)

    @given(groups_and_values)
    def test_centring_keeps_differences_within_a_group(self, items: list[tuple[str, float]]) -> None:
        keys, values = [k for k, _ in items], [v for _, v in items]
        adv = centre_by_group(values, keys)
        for i in range(len(values)):
            for j in range(len(values)):
                if keys[i] == keys[j]:
                    assert adv[i] - adv[j] == pytest.approx(values[i] - values[j], abs=1e-6)

    @given(st.lists(st.tuples(st.sampled_from("xy"), st.floats(-1, 1)), min_size=1, max_size=30))
    def test_agent_advantages_are_zero_mean_unit_scale_per_environment(self, items: list[tuple[str, float]]) -> None:
        keys, values = [k for k, _ in items], [v for _, v in items]
        adv = normalise_by_group(values, keys)
        for k in set(keys):
            members = [a for a, g in zip(adv, keys, strict=True) if g == k]
            assert abs(sum(members)) < 1e-6 * len(members)
            assert all(abs(a) <= math.sqrt(len(members)) + 1e-6 for a in members)

    @given(st.floats(-1, 1), st.integers(1, 10))
    def test_a_group_of_equal_returns_carries_no_signal(self, v: float, n: int) -> None:
        assert normalise_by_group([v] * n, ["e"] * n) == [0.0] * n

    def test_mismatched_lengths_are_rejected(self) -> None:
        with pytest.raises(RewardError, match="2 values but 1 group"):
            centre_by_group([1.0, 2.0], ["a"])
