"""Curriculum simulation with the edit operator: children one small difficulty step from a
parent at the archive's frontier track the agent's frontier (and, under pure regret with the
parent replayed, more closely than writing from scratch)."""

from __future__ import annotations

import pytest
from spade_trainer.curriculum import (
    OPERATORS,
    SimulationConfig,
    early_tracking_error,
    simulate,
    simulate_operator,
)

CFG = SimulationConfig(steps=120)


@pytest.fixture(scope="module", params=[0, 1, 2])
def runs(request: pytest.FixtureRequest) -> dict:
    return {op: simulate_operator(op, "regret", CFG, seed=request.param) for op in OPERATORS}


def test_editing_a_frontier_parent_tracks_the_frontier(runs: dict) -> None:
    for op in ("edit", "mix"):
        assert runs[op].tracking_error < 0.1, op
        assert runs[op].correlation_with_skill() > 0.9, op


def test_editing_tracks_closer_than_writing_under_pure_regret(runs: dict) -> None:
    assert runs["edit"].tracking_error < runs["write"].tracking_error
    assert early_tracking_error(runs["edit"]) < early_tracking_error(runs["write"])


def test_write_is_the_bin_bandit_itself() -> None:
    a = simulate_operator("write", "regret", SimulationConfig(steps=15), seed=4)
    b = simulate("regret", SimulationConfig(steps=15), seed=4)
    assert a.chosen_difficulty == b.chosen_difficulty and a.strategy == "write/regret"


def test_editing_with_random_parents_does_not_track() -> None:
    rand = simulate_operator("edit", "random", CFG, seed=0)
    edit = simulate_operator("edit", "regret", CFG, seed=0)
    assert rand.tracking_error > 2 * edit.tracking_error


def test_the_edit_simulation_is_deterministic_and_checks_its_arguments() -> None:
    cfg = SimulationConfig(steps=10)
    assert simulate_operator("mix", "blend", cfg, seed=2).chosen_difficulty == \
        simulate_operator("mix", "blend", cfg, seed=2).chosen_difficulty
    with pytest.raises(ValueError, match="unknown operator 'mutate'"):
        simulate_operator("mutate")
    with pytest.raises(ValueError, match="unknown strategy"):
        simulate_operator("edit", "luck")
