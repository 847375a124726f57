"""Simulation check: regret-driven design tracks the agent's frontier; the baselines do not."""

from __future__ import annotations

from pathlib import Path

import pytest
from spade_trainer.curriculum import STRATEGIES, SimulationConfig, plot, simulate

CFG = SimulationConfig(steps=120)


@pytest.fixture(scope="module", params=[0, 1, 2])
def traces(request: pytest.FixtureRequest) -> dict:
    return {s: simulate(s, CFG, seed=request.param) for s in STRATEGIES}


def test_regret_driven_selection_tracks_the_frontier(traces: dict) -> None:
    regret = traces["regret"]
    assert regret.tracking_error < 0.1
    assert regret.correlation_with_skill() > 0.85


def test_solve_rate_and_random_selection_do_not(traces: dict) -> None:
    regret = traces["regret"].tracking_error
    for baseline in ("solve_rate", "random"):
        assert traces[baseline].tracking_error > 2 * regret, baseline
    assert traces["random"].correlation_with_skill() < 0.5
    # solve-rate selection drifts to the easiest environments: far below the frontier
    solve = traces["solve_rate"]
    assert sum(solve.chosen_difficulty) / len(solve.chosen_difficulty) < sum(solve.frontier) / len(solve.frontier) - 0.2


def test_the_released_blend_also_follows_the_frontier(traces: dict) -> None:
    assert traces["blend"].tracking_error < traces["random"].tracking_error
    assert traces["blend"].correlation_with_skill() > 0.85


def test_the_simulation_is_deterministic_per_seed() -> None:
    a, b = simulate("regret", SimulationConfig(steps=20), seed=5), simulate("regret", SimulationConfig(steps=20), seed=5)
    assert a.chosen_difficulty == b.chosen_difficulty


def test_unknown_strategy_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown strategy"):
        simulate("oracle")


def test_the_plot_is_written(tmp_path: Path) -> None:
    out = plot([simulate(s, SimulationConfig(steps=10)) for s in STRATEGIES], tmp_path / "c.png")
    assert out.stat().st_size > 10_000
