"""The ``seed_pool`` evaluation suite scores a player on the seed games, per game and skill."""

from __future__ import annotations

import itertools
import json

import pytest
from spade_core.domains import Domain
from spade_games.evaluation import FIRST_SEED, EvaluationError, Player, evaluate

from .conftest import SEED_ENVS, make_env

GAMES = ["code_breaker", "growth_lab"]


def _replaying_factory(game: str, first_seed: int):
    """Players that replay the winning solution of episode i (seed first_seed + i): a test
    double that knows the seed schedule, so a correct evaluation must score 1.0."""
    seed_env = next(s for s in SEED_ENVS if s.name == game)
    counter = itertools.count(first_seed)

    def factory() -> Player:
        env = make_env(seed_env)
        env.reset(seed=next(counter))
        actions = iter(env.solution())
        return lambda obs: next(actions)

    return factory


def test_the_suite_is_registered_with_the_domain(games_domain: Domain) -> None:
    suite = games_domain.eval_suites["seed_pool"]
    result = suite.run(episodes=2, games=GAMES)
    json.dumps(result)  # JSON-serialisable, as EvalSuite promises
    assert set(result["games"]) == set(GAMES)


def test_a_player_that_never_acts_sensibly_scores_zero() -> None:
    result = evaluate(lambda: lambda obs: "hello", episodes=3, games=GAMES)
    for name, game in result["games"].items():
        max_turns = next(s.max_turns for s in SEED_ENVS if s.name == name)
        assert game["mean_return"] == 0.0 and game["win_rate"] == 0.0
        assert game["mean_turns"] == max_turns
    assert result["overall"] == 0.0


@pytest.mark.parametrize("game", GAMES)
def test_a_player_that_plays_the_solutions_scores_one(game: str) -> None:
    result = evaluate(_replaying_factory(game, FIRST_SEED), episodes=4, games=[game])
    assert result["games"][game]["mean_return"] == 1.0
    assert result["games"][game]["win_rate"] == 1.0
    skill = result["games"][game]["skill"]
    assert result["skills"] == {skill: 1.0}


def test_without_a_player_it_reports_the_reference_band() -> None:
    result = evaluate(episodes=3, games=["code_breaker", "sequence_rule"])
    assert result["games"]["code_breaker"]["expert_win_rate"] == 1.0
    assert result["games"]["sequence_rule"]["expert_win_rate"] == 1.0
    assert all(0.0 <= g["blind_return"] <= 1.0 for g in result["games"].values())


def test_bad_requests_are_rejected_with_the_reason() -> None:
    with pytest.raises(EvaluationError, match="unknown seed game.*nope.*known: .*code_breaker"):
        evaluate(episodes=1, games=["nope"])
    with pytest.raises(EvaluationError, match="episodes must be at least 1"):
        evaluate(episodes=0)
