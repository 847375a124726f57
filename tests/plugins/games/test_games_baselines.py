"""Guessing does not pay: a blind player who knows the commands but ignores what it
observes rarely wins any seed game and earns little on average."""

from __future__ import annotations

import pytest
from spade_core.actions import parse_boxed
from spade_core.domains import SeedEnv
from spade_games.baselines import blind_score, vocabulary

from .conftest import SEED_ENVS, make_env

by_name = pytest.mark.parametrize("seed_env", SEED_ENVS, ids=[s.name for s in SEED_ENVS])

MAX_BLIND_WIN_RATE = 0.10
MAX_BLIND_MEAN_RETURN = 0.25


@by_name
def test_a_blind_player_rarely_wins(seed_env: SeedEnv) -> None:
    score = blind_score(seed_env, episodes=100)
    assert score.win_rate <= MAX_BLIND_WIN_RATE, score
    assert score.mean_return <= MAX_BLIND_MEAN_RETURN, score


@by_name
def test_the_blind_vocabulary_is_well_formed_commands(seed_env: SeedEnv) -> None:
    moves = vocabulary(make_env(seed_env), range(50))
    assert len(moves) >= 2
    assert all(parse_boxed(m) for m in moves)


def test_blind_score_is_reproducible_and_checks_its_input() -> None:
    seed_env = SEED_ENVS[0]
    assert blind_score(seed_env, episodes=20) == blind_score(seed_env, episodes=20)
    with pytest.raises(ValueError, match="episodes must be"):
        blind_score(seed_env, episodes=0)
