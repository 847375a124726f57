"""Every game with an expert is winnable from observations alone, within its turn budget,
on every seed tried: what the game reveals is enough, and its feedback is correct."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from spade_core.domains import SeedEnv
from spade_games.experts import EXPERTS, LUCK_DEPENDENT, continue_sequence, play_expert

from .conftest import SEED_ENVS

#: Games left without an expert on purpose, each with its reason. Adding a game means
#: adding an expert or extending this set.
WITHOUT_EXPERT: set[str] = set()
#: Experts slow enough (candidate enumeration) to try on fewer seeds.
SLOW = {"sonar_search"}

always = [s for s in SEED_ENVS if s.name in EXPERTS and s.name not in LUCK_DEPENDENT]
lucky = [s for s in SEED_ENVS if s.name in LUCK_DEPENDENT]


def test_every_game_has_an_expert_or_a_stated_reason() -> None:
    names = {s.name for s in SEED_ENVS}
    assert set(EXPERTS) <= names
    assert names - set(EXPERTS) == WITHOUT_EXPERT
    assert len(EXPERTS) >= 19


@pytest.mark.parametrize("seed_env", always, ids=[s.name for s in always])
def test_the_expert_wins_every_seed_within_the_budget(seed_env: SeedEnv) -> None:
    for seed in range(10 if seed_env.name in SLOW else 20):
        result = play_expert(seed_env, seed)
        assert result.won, f"seed {seed}: {result}"
        assert result.turns <= seed_env.max_turns


@pytest.mark.parametrize("seed_env", lucky, ids=[s.name for s in lucky])
def test_in_luck_dependent_games_the_expert_usually_wins(seed_env: SeedEnv) -> None:
    results = [play_expert(seed_env, seed) for seed in range(30)]
    assert sum(r.won for r in results) / len(results) >= 0.8, results
    assert all(r.turns <= seed_env.max_turns for r in results)


def test_a_game_without_expert_says_so() -> None:
    import dataclasses

    unknown = dataclasses.replace(SEED_ENVS[0], name="no_such_game")
    with pytest.raises(KeyError):
        play_expert(unknown, 0)


@given(coefs=st.lists(st.integers(-20, 20), min_size=1, max_size=4), upto=st.integers(10, 30))
def test_sequence_extension_continues_every_low_degree_polynomial(coefs: list[int], upto: int) -> None:
    def term(n: int) -> int:
        return sum(c * n**k for k, c in enumerate(coefs))

    extended = continue_sequence([term(n) for n in range(1, 11)], upto)
    assert extended == [term(n) for n in range(1, upto + 1)]


@given(a=st.integers(-50, 50), b=st.integers(-50, 50), upto=st.integers(10, 30))
def test_sequence_extension_continues_fibonacci_style_recurrences(a: int, b: int, upto: int) -> None:
    terms = [a, b]
    while len(terms) < upto:
        terms.append(terms[-1] + terms[-2])
    assert continue_sequence(terms[:10], upto) == terms
