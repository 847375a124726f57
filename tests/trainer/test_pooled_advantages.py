"""Advantages under a multi-process launch: computed over every process's rewards, each
process keeps its own samples' advantages, exactly as if one process had collected all."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from spade_trainer.errors import TrainerError
from spade_trainer.samples import PolicySample, Role, reward_keys, with_advantages, with_pooled_advantages


def _sample(role: Role, group: str, reward: float) -> PolicySample:
    return PolicySample(role, [1], [2], [-1.0], reward, group)


samples = st.builds(
    _sample,
    st.sampled_from(list(Role)),
    st.sampled_from(["logical_deduction", "spatial", "env-a", "env-a/hinted"]),
    st.floats(min_value=-2.0, max_value=2.0, allow_nan=False, allow_subnormal=False),
)
# a launch: each process's samples, in the order it collected them
launches = st.lists(st.lists(samples, max_size=8), min_size=1, max_size=4)


@given(launches)
def test_each_process_gets_the_advantages_of_one_process_collecting_everything(launch: list[list[PolicySample]]) -> None:
    everyone = [reward_keys(part) for part in launch]
    together = with_advantages([s for part in launch for s in part])
    offset = 0
    for rank, part in enumerate(launch):
        mine = with_pooled_advantages(part, everyone, rank)
        expected = together[offset:offset + len(part)]
        assert [s.advantage for s in mine] == pytest.approx([s.advantage for s in expected], abs=1e-12)
        assert [(s.role, s.group, s.reward) for s in mine] == [(s.role, s.group, s.reward) for s in part]
        offset += len(part)


@given(st.lists(samples, max_size=10))
def test_one_process_pools_with_itself_only(part: list[PolicySample]) -> None:
    pooled = with_pooled_advantages(part, [reward_keys(part)], 0)
    assert [s.advantage for s in pooled] == [s.advantage for s in with_advantages(part)]


def test_a_group_split_over_processes_shares_one_baseline() -> None:
    rank0 = [_sample(Role.designer, "spatial", 1.0)]
    rank1 = [_sample(Role.designer, "spatial", 0.0)]
    everyone = [reward_keys(rank0), reward_keys(rank1)]
    # alone, each process's only sample would be its own baseline: advantage 0, no gradient
    assert with_advantages(rank0)[0].advantage == 0.0
    assert with_pooled_advantages(rank0, everyone, 0)[0].advantage == pytest.approx(0.5)
    assert with_pooled_advantages(rank1, everyone, 1)[0].advantage == pytest.approx(-0.5)


def test_gathered_rewards_that_are_not_this_processes_are_refused() -> None:
    part = [_sample(Role.agent, "env-a", 1.0)]
    with pytest.raises(TrainerError, match="not this process's samples"):
        with_pooled_advantages(part, [reward_keys(part), []], 1)
    with pytest.raises(TrainerError, match="rank 2 is not one of the 2 processes"):
        with_pooled_advantages(part, [reward_keys(part), []], 2)
