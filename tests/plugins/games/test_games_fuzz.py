"""Property fuzzing of the seed pool with the plugin's own action strategy.

For all seeds and all action sequences the strategy produces: nothing raises, every value
crossing the adapter is valid (finite reward in [0, 1], bool flags), reward 1.0 only comes
with termination, and no episode outlives its turn budget.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spade_core.actions import find_boxed
from spade_core.domains import SeedEnv
from spade_games.fuzz import VERBS, actions

from .conftest import SEED_ENVS, make_env

by_name = pytest.mark.parametrize("seed_env", SEED_ENVS, ids=[s.name for s in SEED_ENVS])
seeds = st.integers(min_value=0, max_value=2**32 - 1)
fuzz_settings = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@by_name
@fuzz_settings
@given(seed=seeds, script=st.lists(actions(), max_size=40))
def test_fuzzed_play_stays_within_the_contract(seed_env: SeedEnv, seed: int, script: list[str]) -> None:
    env = make_env(seed_env)
    env.reset(seed=seed)
    for turn, action in enumerate(script, start=1):
        _, reward, terminated, truncated, _ = env.step(action)  # the adapter validates types
        assert math.isfinite(reward) and 0.0 <= reward <= 1.0
        if reward == 1.0:
            assert terminated
        assert turn <= seed_env.max_turns
        if terminated or truncated:
            break


@by_name
@settings(max_examples=15, deadline=None)
@given(seed=seeds)
def test_solution_wins_for_any_seed(seed_env: SeedEnv, seed: int) -> None:
    env = make_env(seed_env)
    env.reset(seed=seed)
    result = None
    for action in env.solution():
        result = env.step(action)
    assert result is not None and result[1:4] == (1.0, True, False)


@settings(max_examples=100, deadline=None)
@given(action=actions())
def test_fuzz_strategy_yields_strings_with_parseable_boxes(action: str) -> None:
    assert isinstance(action, str)
    for payload in find_boxed(action):
        assert isinstance(payload, str)


def test_fuzz_strategy_covers_well_formed_and_malformed_commands() -> None:
    from hypothesis import Phase, find

    quick = settings(database=None, phases=[Phase.generate], max_examples=2000)
    boxed_verb = find(
        actions(), lambda a: any(p.strip().lower().startswith(VERBS) for p in find_boxed(a)), settings=quick
    )
    unboxed = find(actions(), lambda a: "\\boxed{" not in a and a.startswith(VERBS), settings=quick)
    unclosed = find(actions(), lambda a: a.startswith("\\boxed{") and not find_boxed(a), settings=quick)
    assert boxed_verb and unboxed and unclosed
