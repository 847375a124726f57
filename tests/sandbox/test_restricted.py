"""The in-process RestrictedPython backend: same API and errors, labelled not a boundary."""

from __future__ import annotations

import time

import pytest
from envsrc import COUNTER, step_body, step_returns
from spade_sandbox.errors import (
    EnvCodeError,
    EnvContractViolation,
    SandboxCrash,
    SandboxTimeout,
    SandboxUnavailable,
    StaticCheckError,
)

from spade_sandbox import SandboxedEnv, SandboxLimits, SandboxPool

pytest.importorskip("RestrictedPython")


@pytest.fixture(scope="module")
def rpool():
    with SandboxPool(SandboxLimits(call_timeout_s=1.0), backend="restricted", allow_insecure=True) as p:
        yield p


def test_refuses_untrusted_code_without_the_explicit_override():
    with SandboxPool(backend="restricted") as p:
        with pytest.raises(SandboxUnavailable, match="not a security boundary"):
            p.spawn(COUNTER)


def test_runs_generated_environment_idioms(rpool):
    h = rpool.spawn(COUNTER)
    obs, info = rpool.reset(h, seed=3)
    assert obs.startswith("secret ") and info == {"seed": 3}
    assert rpool.step(h, "win") == ("turn 1: win", 1.0, True, False, {"turn": 1})
    assert rpool.call(h, "solution") == ["win"]
    assert rpool.worker_of(h).layers == ("restricted-python",)


def test_results_match_the_native_backend(rpool, pool):
    native, restricted = pool.spawn(COUNTER), rpool.spawn(COUNTER)
    assert pool.reset(native, seed=11) == rpool.reset(restricted, seed=11)
    for action in ("a", "b", "win"):
        assert pool.step(native, action) == rpool.step(restricted, action)


def test_static_layer_still_applies(rpool):
    with pytest.raises(StaticCheckError):
        rpool.spawn("import os\n" + COUNTER)


def test_deadline_stops_a_python_loop_and_loses_the_code_version(rpool):
    hang = rpool.spawn(step_body("while True:\n    pass", name="HangEnv"))
    t0 = time.monotonic()
    with pytest.raises(SandboxTimeout, match="did not return within 1 s"):
        rpool.step(hang, "go")
    assert time.monotonic() - t0 < 10.0
    with pytest.raises(SandboxCrash, match="instance lost"):
        rpool.step(hang, "again")
    other = rpool.spawn(COUNTER)
    assert rpool.reset(other, seed=1)[0].startswith("secret")


def test_env_errors_and_garbage_are_reported_like_native(rpool):
    boom = rpool.spawn(step_body("raise ValueError('bad ' + action)", name="BoomEnv"))
    with pytest.raises(EnvCodeError, match="ValueError: bad x") as info:
        rpool.step(boom, "x")
    assert 'File "<env>"' in info.value.env_traceback
    nan = rpool.spawn(step_returns("('x', float('nan'), False, False, {})"))
    with pytest.raises(EnvContractViolation, match="non-finite"):
        rpool.step(nan, "x")
    results = rpool.step_many([(boom, "y"), (rpool.spawn(COUNTER), "win")])
    assert isinstance(results[0], EnvCodeError) and results[1][2] is True


def test_sandboxed_env_works_on_the_restricted_backend(rpool):
    env = SandboxedEnv(COUNTER, pool=rpool, max_turns=2)
    env.reset(seed=1)
    assert env.step("a")[3] is False and env.step("b")[3] is True
    env.close()


def test_a_memory_error_is_the_sandbox_memory_error_and_ends_the_instance(rpool):
    from spade_sandbox.errors import SandboxMemoryError

    h = rpool.spawn(step_body("x = 'a' * (1 << 46)", name="HugeEnv"))
    rpool.reset(h, seed=1)
    with pytest.raises(SandboxMemoryError) as info:
        rpool.step(h, "eat")
    assert info.value.kind == "memory" and info.value.worker_fatal
    with pytest.raises(SandboxCrash, match="instance lost"):
        rpool.reset(h)
