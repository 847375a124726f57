"""Fixtures and helpers for the games plugin's tests: the seed pool, loaded as trusted code."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from spade_core.domains import Domain, SeedEnv
from spade_core.env import ReferenceEnvAdapter
from spade_core.plugins import SpadePlugins
from spade_core.source import load_trusted_class
from spade_games.catalog import seed_envs

SEED_ENVS: tuple[SeedEnv, ...] = seed_envs()


@functools.cache
def env_class(seed_env: SeedEnv) -> type:
    """The game's class, executed in-process (the seed pool is the plugin's own trusted code)."""
    return load_trusted_class(seed_env.source(), seed_env.class_name, source_name=str(seed_env.path))


def make_env(seed_env: SeedEnv) -> ReferenceEnvAdapter:
    """A fresh Gymnasium view of the game, truncating at the catalog's ``max_turns``."""
    return ReferenceEnvAdapter(env_class(seed_env)(), max_turns=seed_env.max_turns)


def play(env: ReferenceEnvAdapter, seed: int, actions: list[str]) -> list[tuple[Any, ...]]:
    """Reset with ``seed`` and step through ``actions`` until the episode ends; the trajectory."""
    obs, _ = env.reset(seed=seed)
    trajectory: list[tuple[Any, ...]] = [(obs,)]
    for action in actions:
        obs, reward, terminated, truncated, _ = env.step(action)
        trajectory.append((obs, reward, terminated, truncated))
        if terminated or truncated:
            break
    return trajectory


@pytest.fixture(scope="session")
def games_domain() -> Domain:
    """The games domain, loaded the way SPADE loads it: through the ``spade`` entry point."""
    return SpadePlugins(only=["games"]).domain("games")
