"""Every game with an expert is winnable from observations alone, within its turn budget,
on every seed tried: what the game reveals is enough, and its feedback is correct."""

from __future__ import annotations

import pytest

from spade_core.domains import SeedEnv
from spade_games.experts import EXPERTS, play_expert

from .conftest import SEED_ENVS

#: Games left without an expert on purpose (luck-dependent, or the expert would need the
#: generator's rule list). Adding a game means adding an expert or extending this list.
WITHOUT_EXPERT = {"battleship", "fog_maze", "sonar_search", "sequence_rule"}

with_expert = [s for s in SEED_ENVS if s.name in EXPERTS]


def test_every_game_has_an_expert_or_a_stated_reason() -> None:
    names = {s.name for s in SEED_ENVS}
    assert set(EXPERTS) <= names
    assert names - set(EXPERTS) == WITHOUT_EXPERT
    assert len(EXPERTS) >= 15


@pytest.mark.parametrize("seed_env", with_expert, ids=[s.name for s in with_expert])
def test_the_expert_wins_every_seed_within_the_budget(seed_env: SeedEnv) -> None:
    for seed in range(25):
        result = play_expert(seed_env, seed)
        assert result.won, f"seed {seed}: {result}"
        assert result.turns <= seed_env.max_turns


def test_an_unknown_game_has_no_expert() -> None:
    battleship = next(s for s in SEED_ENVS if s.name == "battleship")
    with pytest.raises(KeyError):
        play_expert(battleship, 0)
