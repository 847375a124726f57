"""The seed pool under the real machinery: the sandbox and the validation pipeline.

Seeds are trusted code, but they are also the baseline pool the trainer runs in sandbox
workers, and the examples the designer imitates: each must behave identically in a
worker and pass every stage a designed game must pass.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from spade_core.domains import Domain, SeedEnv
from spade_core.metadata import EnvMetadata
from spade_games.plugin import GARBAGE_ACTIONS
from spade_games.prompt import SKELETON

from .conftest import SEED_ENVS, make_env, play

by_name = pytest.mark.parametrize("seed_env", SEED_ENVS, ids=[s.name for s in SEED_ENVS])


@pytest.fixture(scope="module")
def pool() -> Iterator[object]:
    from spade_sandbox.launcher import SandboxLauncher

    with SandboxLauncher().pool() as p:
        yield p


@pytest.fixture(scope="module")
def validator(pool: object) -> Iterator[object]:
    from spade_designer.validation import Validator

    with Validator(pool) as v:
        yield v


def _metadata(seed_env: SeedEnv) -> EnvMetadata:
    return EnvMetadata(
        name=seed_env.name,
        domain="games",
        skill=seed_env.skill,
        description=seed_env.description,
        difficulty=seed_env.difficulty,
        max_turns=seed_env.max_turns,
        class_name=seed_env.class_name,
    )


@by_name
def test_a_sandboxed_game_plays_exactly_like_the_local_one(seed_env: SeedEnv, pool: object) -> None:
    from spade_sandbox import SandboxedEnv

    for seed in range(3):
        local = make_env(seed_env)
        local.reset(seed=seed)
        script = [GARBAGE_ACTIONS[seed + 3]] + local.solution()
        remote = SandboxedEnv(
            seed_env.source(), pool=pool, max_turns=seed_env.max_turns, class_name=seed_env.class_name
        )
        try:
            remote_trajectory = play(remote, seed, script)
        finally:
            remote.close()
        local_trajectory = play(make_env(seed_env), seed, script)
        assert remote_trajectory == local_trajectory
        assert remote_trajectory[-1][1:] == (1.0, True, False)


@by_name
def test_every_seed_game_passes_the_validation_pipeline(
    seed_env: SeedEnv, validator: object, games_domain: Domain
) -> None:
    report = validator.validate(seed_env.source(), metadata=_metadata(seed_env), domain=games_domain)
    failures = [f"{f.stage}: {f.message}" for f in report.findings if not f.ok]
    assert report.passed, failures


def test_the_prompt_skeleton_passes_the_validation_pipeline(validator: object, games_domain: Domain) -> None:
    report = validator.validate(SKELETON, domain=games_domain)
    assert report.passed, [f"{f.stage}: {f.message}" for f in report.findings if not f.ok]
