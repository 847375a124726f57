"""Every seed game honours the environment contract, for many seeds.

These are the properties the designer's own games are validated against: Gymnasium
compatibility, determinism per seed, variety across seeds, a replayable winning solution,
robustness to garbage, interactivity, and a turn budget.
"""

from __future__ import annotations

import math
import re
import warnings

import pytest
from gymnasium.utils.env_checker import check_env
from spade_core.actions import parse_boxed
from spade_core.domains import SeedEnv
from spade_games.plugin import GARBAGE_ACTIONS

from .conftest import SEED_ENVS, env_class, make_env, play

SWEEP = range(40)
by_name = pytest.mark.parametrize("seed_env", SEED_ENVS, ids=[s.name for s in SEED_ENVS])


def _assert_unit_reward(reward: float) -> None:
    assert math.isfinite(reward) and 0.0 <= reward <= 1.0, reward


@by_name
def test_passes_gymnasium_env_checker(seed_env: SeedEnv) -> None:
    env = make_env(seed_env)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning is a contract defect
        check_env(env, skip_render_check=True)


@by_name
def test_same_seed_gives_the_same_game_and_trajectory(seed_env: SeedEnv) -> None:
    for seed in SWEEP:
        reference = make_env(seed_env)
        reference.reset(seed=seed)
        # A mixed script: the winning moves interleaved with garbage, so error paths are replayed too.
        script = []
        for action in reference.solution():
            script += [GARBAGE_ACTIONS[seed % len(GARBAGE_ACTIONS)], action]
        first, second = make_env(seed_env), make_env(seed_env)
        assert play(first, seed, script) == play(second, seed, script)


@by_name
def test_different_seeds_give_different_games(seed_env: SeedEnv) -> None:
    env = make_env(seed_env)
    games = set()
    for seed in range(20):
        first_obs, _ = env.reset(seed=seed)
        games.add((first_obs, tuple(env.solution())))
    assert len(games) >= 10, f"only {len(games)} distinct games in 20 seeds"


@by_name
def test_solution_replays_to_full_reward_within_the_budget(seed_env: SeedEnv) -> None:
    for seed in SWEEP:
        env = make_env(seed_env)
        env.reset(seed=seed)
        solution = env.solution()
        assert isinstance(solution, list) and solution, "solution() must be a non-empty action list"
        assert len(solution) < seed_env.max_turns
        assert all(parse_boxed(a) is not None for a in solution), solution
        trajectory = play(make_env(seed_env), seed, solution)
        steps = trajectory[1:]
        assert len(steps) == len(solution), f"seed {seed}: ended early at step {len(steps)}"
        *before, (_, reward, terminated, truncated) = steps
        assert (reward, terminated, truncated) == (1.0, True, False), f"seed {seed}: {steps[-1]}"
        for _, r, term, trunc in before:
            assert r < 1.0 and not term and not trunc


@by_name
def test_garbage_actions_never_crash_end_or_win_the_game(seed_env: SeedEnv) -> None:
    for seed in range(10):
        env = make_env(seed_env)
        start, _ = env.reset(seed=seed)
        for garbage in GARBAGE_ACTIONS:
            obs, reward, terminated, truncated, _ = env.step(garbage)
            _assert_unit_reward(reward)
            assert reward == 0.0, f"{garbage!r} earned {reward} right after reset: doing nothing must earn nothing"
            assert not terminated, f"{garbage!r} ended the game"
            assert obs and obs != start, "an invalid action must be answered with feedback"
            env.reset(seed=seed)


@by_name
def test_the_turn_budget_truncates_an_unsolved_episode(seed_env: SeedEnv) -> None:
    inner = env_class(seed_env)()
    assert inner.max_turns == seed_env.max_turns, "catalog max_turns must match the game's default"
    inner.reset(seed=7)
    for turn in range(1, seed_env.max_turns + 1):
        _, reward, terminated, truncated, _ = inner.step("\\boxed{asdf qwerty}")
        _assert_unit_reward(reward)
        assert not terminated
        # The game itself (not only the adapter) enforces its budget.
        assert truncated is (turn == seed_env.max_turns)
    # Stepping a finished episode is harmless.
    obs, reward, *_ = inner.step("\\boxed{asdf}")
    assert isinstance(obs, str) and reward == 0.0


@by_name
def test_observations_respond_to_actions(seed_env: SeedEnv) -> None:
    for seed in range(10):
        env = make_env(seed_env)
        start, _ = env.reset(seed=seed)
        first_move = env.solution()[0]
        moved, reward, terminated, _, _ = env.step(first_move)
        assert moved != start
        env.reset(seed=seed)
        rejected, *_ = env.step("\\boxed{asdf qwerty}")
        assert moved != rejected, "a valid move and an invalid one got the same reply"


@by_name
def test_first_observation_states_the_command_grammar(seed_env: SeedEnv) -> None:
    env = make_env(seed_env)
    first_obs, _ = env.reset(seed=3)
    assert "\\boxed{" in first_obs
    verbs = {parse_boxed(a).split()[0].lower() for a in env.solution()}
    for verb in verbs:
        assert re.search(r"\\boxed\{" + re.escape(verb), first_obs, re.IGNORECASE), verb
    assert str(seed_env.max_turns) in first_obs, "the turn budget should be announced"


_TRAJECTORIES_SCRIPT = """
import json, sys
from tests.plugins.games.conftest import SEED_ENVS, make_env, play
from spade_games.plugin import GARBAGE_ACTIONS
out = {}
for seed_env in SEED_ENVS:
    for seed in range(5):
        env = make_env(seed_env)
        env.reset(seed=seed)
        script = [GARBAGE_ACTIONS[1]] + env.solution()
        out[f"{seed_env.name}/{seed}"] = play(make_env(seed_env), seed, script)
json.dump(out, sys.stdout)
"""


def test_games_replay_identically_in_another_process() -> None:
    # Workers are separate processes with their own string-hash salt: a game that iterated a
    # set of strings to build its state would differ between them.
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    # Another string-hash salt than this process's (random unless set); only this plugin loads.
    salt = "1" if os.environ.get("PYTHONHASHSEED") != "1" else "2"
    env = {**os.environ, "PYTHONHASHSEED": salt, "SPADE_PLUGINS": "games"}
    out = subprocess.run(
        [sys.executable, "-c", _TRAJECTORIES_SCRIPT], cwd=root, env=env, capture_output=True, text=True, check=True
    )
    theirs = json.loads(out.stdout)
    for key, trajectory in theirs.items():
        name, seed = key.split("/")
        seed_env = next(s for s in SEED_ENVS if s.name == name)
        env_here = make_env(seed_env)
        env_here.reset(seed=int(seed))
        script = [GARBAGE_ACTIONS[1]] + env_here.solution()
        mine = play(make_env(seed_env), int(seed), script)
        assert [list(step) for step in mine] == trajectory, key
