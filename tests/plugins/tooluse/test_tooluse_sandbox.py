"""Seed tool-use environments run unchanged inside the sandbox (static check, worker
process, solution replay)."""

from __future__ import annotations

import json

import pytest
from spade_tooluse.catalog import seed_envs

sandbox = pytest.importorskip("spade_sandbox")
try:
    from spade_sandbox.launcher import SandboxLauncher

    from spade_sandbox import SandboxedEnv, SandboxPool, check_source  # noqa: F401 (what this test needs exists)
except (ImportError, AttributeError):  # the sandbox package is still landing
    pytest.skip("spade_sandbox has no SandboxPool yet", allow_module_level=True)

ALLOWED = ("spade_tooluse.base",)
SEEDS = {s.name: s for s in seed_envs()}


@pytest.mark.parametrize("seed", list(SEEDS.values()), ids=lambda s: s.name)
def test_every_seed_passes_the_static_check_with_the_domain_allow_list(seed):
    report = check_source(seed.source(), allowed_modules=ALLOWED)
    assert report.ok, report.findings
    assert report.class_name == seed.class_name


def test_a_seed_without_the_allow_list_is_refused():
    report = check_source(SEEDS["tooluse.bank_ledger"].source(), allowed_modules=())
    assert not report.ok


@pytest.mark.slow
def test_a_seed_env_replays_its_solution_inside_a_sandbox_worker():
    pool = SandboxLauncher().pool()
    try:
        for name in ("tooluse.bank_ledger", "tooluse.file_system"):
            handle = pool.spawn(SEEDS[name].source(), allowed_modules=ALLOWED)
            obs, _ = pool.reset(handle, seed=7)
            assert "User (request 1 of" in obs
            schemas = pool.call(handle, "get_tool_schemas")
            assert schemas and schemas[0]["type"] == "function"
            result = None
            for action in pool.call(handle, "solution"):
                result = pool.step(handle, action)
            assert result is not None and result[1] == 1.0 and result[2] is True
            pool.close_env(handle)
    finally:
        pool.close()


@pytest.mark.slow
def test_sandboxed_env_wrapper_runs_a_seed_and_survives_garbage():
    env = SandboxedEnv(SEEDS["tooluse.warehouse_stock"].source(), allowed_modules=ALLOWED, max_turns=20)
    try:
        env.reset(seed=2)
        for action in ("<tool_call>{oops</tool_call>", "", '<tool_call>{"name": "reserve", "arguments": {}}</tool_call>'):
            obs, reward, terminated, truncated, _ = env.step(action)
            assert reward == 0.0 and not terminated
        env.reset(seed=2)
        for action in env.solution():
            obs, reward, terminated, truncated, _ = env.step(action)
        assert reward == 1.0 and terminated
    finally:
        env.close()


@pytest.mark.slow
def test_a_reference_style_env_runs_in_the_sandbox_after_adding_the_base_import():
    from spade_tooluse.reference_base import with_base_import

    from .test_tooluse_reference_base import REFERENCE_STYLE

    source = with_base_import(REFERENCE_STYLE)
    report = check_source(source, allowed_modules=ALLOWED)
    assert report.ok, report.findings
    pool = SandboxLauncher().pool()
    try:
        handle = pool.spawn(source, allowed_modules=ALLOWED)
        pool.reset(handle, seed=4)
        obs, *_ = pool.step(handle, '<tool_call>{"name": "list_shelves", "arguments": {}}</tool_call>')
        total = sum(json.loads(obs.split("\n", 1)[1]).values())
        assert pool.step(handle, f"<answer>{total}</answer>")[1:3] == (1.0, True)
    finally:
        pool.close()


@pytest.mark.slow
def test_every_seed_passes_the_designers_validation_pipeline():
    validation = pytest.importorskip("spade_designer.validation")
    from spade_designer.validation.config import ValidationConfig
    from spade_designer.validation.pipeline import ValidationRequest

    # The machine is shared: the per-call time bound is a speed check that belongs to the
    # benchmarks (our reset takes about a millisecond in process), not to this test.
    config = ValidationConfig(call_time_bound_s=2.0)
    with validation.Validator(config=config) as validator:
        requests = [ValidationRequest(s.source(), domain="tooluse") for s in SEEDS.values()]
        reports = validator.validate_many(requests, max_workers=2)
    failed = {name: (r.failed_stage, r.reasons) for name, r in zip(SEEDS, reports, strict=True) if not r.passed}
    assert failed == {}
