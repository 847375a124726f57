"""Shared fixtures of the designer tests: a real SQLite store, distinct environment sources."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from spade_core.metadata import EnvMetadata, EnvStatus, StatsSnapshot, ValidationReport
from spade_core.store import EnvStore

#: A small valid game (passes the whole validation pipeline): a hidden number 10-99.
LANTERN = (Path(__file__).parent / "envs" / "lantern.py").read_text(encoding="utf-8")

WORDS = ["amber", "basil", "cedar", "delta", "ember", "fable", "gamma", "haven", "ivory", "jolly", "karma",
         "lemon", "mango", "noble", "orbit", "pearl", "quartz", "raven", "sable", "tango", "umber", "vivid"]


def distinct_source(i: int) -> str:
    """A small environment whose code shares few token shingles with any other ``i``."""
    rng = random.Random(i)
    names = rng.sample(WORDS, 8)
    body = "\n".join(f"        self.{n}_{i} = {rng.randint(0, 999)} * {n!r}.count({names[(k + 1) % 8]!r})"
                     for k, n in enumerate(names))
    return (
        f"class Game{i}Env:\n"
        f"    def __init__(self):\n{body}\n\n"
        f"    def reset(self, seed=None):\n        return {names[0]!r} + str(seed), {{}}\n\n"
        f"    def step(self, action):\n        return {names[1]!r}, 0.0, True, False, {{}}\n"
    )


@pytest.fixture
def store(tmp_path):
    s = EnvStore(f"sqlite:///{tmp_path / 'store.db'}")
    yield s
    s.close()


def add_env(store, i, *, skill="logical_deduction", win_rate=None, regret=None, passed=True, reasons=(),
            source=None, domain="games"):
    meta = EnvMetadata(name=f"Game{i}Env_x", domain=domain, skill=skill)
    if not passed:
        meta = meta.model_copy(update={"validation": ValidationReport(
            passed=False, failed_stage="contract", reasons=list(reasons) or ["contract_violation: bad"])})
    stored = store.add(source or distinct_source(i), meta)
    if win_rate is not None:
        store.record_stats(stored.id, StatsSnapshot(policy_snapshot="step-1", samples=32, win_rate=win_rate,
                                                    regret=regret))
    if passed:
        store.set_status(stored.id, EnvStatus.admitted)
    return store.get(stored.id)


@pytest.fixture(scope="module")
def pool():
    from spade_sandbox.launcher import SandboxLauncher

    with SandboxLauncher().pool() as p:
        yield p


@pytest.fixture
def validator(pool):
    """A fresh validator per test (its novelty index remembers every store it synced)
    over one sandbox pool for the module."""
    from spade_designer.validation import ValidationConfig, Validator

    # generous call-time bounds: the machine running the suite may be heavily shared, and
    # these tests are about the designer, not about the validator's timing checks
    return Validator(pool, ValidationConfig(fuzz_examples=4, call_time_bound_s=5.0, sandbox_call_timeout_s=20.0))
