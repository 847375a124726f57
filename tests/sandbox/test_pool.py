"""The pool API: instances, batches, validation of everything that comes back."""

from __future__ import annotations

import math

import pytest
from envsrc import COUNTER, step_body, step_returns
from hypothesis import given, settings
from hypothesis import strategies as st
from spade_sandbox.errors import (
    EnvCodeError,
    EnvContractViolation,
    EnvMethodMissing,
    SandboxCrash,
    SandboxError,
    SandboxRequestError,
    StaticCheckError,
)

from spade_sandbox import EnvHandle, SandboxPool


def test_reset_step_and_solution_round_trip(pool: SandboxPool):
    h = pool.spawn(COUNTER)
    obs, info = pool.reset(h, seed=7)
    assert obs.startswith("secret ") and info == {"seed": 7}
    assert pool.step(h, "look") == ("turn 1: look", 0.0, False, False, {"turn": 1})
    assert pool.step(h, "win") == ("turn 2: win", 1.0, True, False, {"turn": 2})
    assert pool.call(h, "solution") == ["win"]
    assert pool.call(h, "get_tool_schemas") == []
    pool.close_env(h)


def test_same_seed_gives_same_observation_in_any_instance(pool: SandboxPool):
    a, b = pool.spawn(COUNTER), pool.spawn(COUNTER)
    assert pool.reset(a, seed=3) == pool.reset(b, seed=3)
    assert pool.reset(a, seed=3) != pool.reset(b, seed=4)


def test_one_worker_per_code_version_holding_many_instances(pool: SandboxPool):
    a, b = pool.spawn(COUNTER), pool.spawn(COUNTER)
    c = pool.spawn(COUNTER + "\n# another version\n")
    assert a.worker_id == b.worker_id != c.worker_id
    assert pool.worker_of(a).pid != pool.worker_of(c).pid
    pool.reset(a, 1)
    pool.reset(b, 1)
    pool.step(a, "x")
    pool.step(a, "x")
    assert pool.step(b, "x")[4] == {"turn": 1}  # instances do not share state


def test_an_isolation_key_gives_the_same_code_a_worker_of_its_own(pool: SandboxPool):
    """Same source, class and modules: one worker per isolation key, each running the code
    as given (one code hash)."""
    shared = COUNTER
    a, b = pool.spawn(shared, isolation="client-a"), pool.spawn(shared, isolation="client-a")
    c = pool.spawn(shared, isolation="client-b")
    plain = pool.spawn(shared)
    assert a.worker_id == b.worker_id
    assert len({a.worker_id, c.worker_id, plain.worker_id}) == 3
    assert a.code_hash == c.code_hash == plain.code_hash
    assert len({pool.worker_of(h).pid for h in (a, c, plain)}) == 3


def test_env_exception_is_env_code_error_with_traceback_and_worker_survives(pool: SandboxPool):
    src = step_body("if action == 'boom':\n    raise ValueError('the env broke: ' + action)")
    h, other = pool.spawn(src), pool.spawn(src)
    pid = pool.worker_of(h).pid
    pool.reset(h)
    with pytest.raises(EnvCodeError) as info:
        pool.step(h, "boom")
    err = info.value
    assert err.kind == "env_code"
    assert "ValueError: the env broke: boom" in err.env_traceback
    assert 'File "<env>", line' in err.env_traceback
    assert "raise ValueError" in err.env_traceback  # the env's own source line is shown
    assert pool.step(h, "fine")[0] == "done"
    assert pool.step(other, "fine")[0] == "done"
    assert pool.worker_of(h).pid == pid


def test_constructor_failure_raises_env_code_error():
    src = "class BadEnv:\n    def __init__(self):\n        raise RuntimeError('no')\n    def reset(self, seed=None):\n        return 'a', {}\n    def step(self, a):\n        return 'a', 0.0, True, False, {}\n"
    with SandboxPool() as p:
        with pytest.raises(EnvCodeError, match="RuntimeError: no"):
            p.spawn(src)


def test_class_body_failure_raises_env_code_error(pool: SandboxPool):
    with pytest.raises(EnvCodeError, match="ZeroDivisionError"):
        pool.spawn(COUNTER + "\nx = 1 / 0\n")


def test_compile_time_errors_are_static_findings(pool: SandboxPool):
    with pytest.raises(StaticCheckError, match="__future__"):
        pool.spawn("x = 1\n" + COUNTER)


def test_static_rejection_happens_before_any_worker(pool: SandboxPool):
    before = len(pool.workers())
    with pytest.raises(StaticCheckError) as info:
        pool.spawn(COUNTER + "import os\n")
    assert info.value.kind == "static"
    assert info.value.findings[0].rule == "import"
    assert f"line {COUNTER.count(chr(10)) + 1}" in str(info.value)
    assert len(pool.workers()) == before


@pytest.mark.parametrize(
    ("expr", "needle"),
    [
        ("(123, 0.0, False, False, {})", "type int"),
        ("('x', float('nan'), False, False, {})", "non-finite"),
        ("('x', float('inf'), False, False, {})", "non-finite"),
        ("('x', 'high', False, False, {})", "reward of type str"),
        ("('x', '0.5', False, False, {})", "reward of type str"),
        ("('x', True, False, False, {})", "reward of type bool"),
        ("('x', 0.0, 'yes', False, {})", "terminated='yes' of type str"),
        # the contract's one rule (spade_core.contract.flag), as in-process: a truthy int hides a bug
        ("('x', 0.0, 1, False, {})", "terminated=1 of type int"),
        ("('x', 0.0, False, 0, {})", "truncated=0 of type int"),
        ("('x', 0.0, False, False, [])", "info of type list"),
        ("('x' * 70000, 0.0, False, False, {})", "70000 characters"),
        ("'just a string'", r"step\(\) returned str; expected \(observation, reward, terminated, truncated, info\)"),
        ("('x', 1.0, True, {})", r"returned a 4-tuple \(str, float, bool, dict\) \(the old Gym API"),  # reported, not repaired
        ("('x', 0.0, False, False, {'log': 'y' * 70000})", "characters of text"),
        ("('x', 0.0, False, False, {'deep': [[{'a': 'y' * 40000}], 'z' * 40000]})", "characters of text"),
    ],
)
def test_garbage_step_results_are_contract_violations_and_worker_survives(pool: SandboxPool, expr: str, needle: str):
    h = pool.spawn(step_returns(expr))
    pid = pool.worker_of(h).pid
    with pytest.raises(EnvContractViolation, match=needle) as info:
        pool.step(h, "a")
    assert info.value.kind == "contract" and info.value.method in ("step", "info")
    assert pool.reset(h) == ("ready", {})
    assert pool.worker_of(h).pid == pid


def test_odd_but_valid_values_are_converted(pool: SandboxPool):
    h = pool.spawn(step_returns("('x', 1, True, False, {1: {2, 3}, 'o': object(), 'big': 10**30})"))
    flat = pool.spawn(step_returns("('x', 0.5, False, False, {'big': 10**30, 'neg': -2**70})", name="FlatEnv"))
    assert pool.step(flat, "a")[4] == {"big": str(10**30), "neg": str(-(2**70))}
    obs, reward, term, trunc, info = pool.step(h, "a")
    assert (reward, term, trunc) == (1.0, True, False)
    assert type(reward) is float and type(term) is bool
    assert info["1"] == [2, 3] and info["o"].startswith("<object object") and info["big"] == str(10**30)


def test_step_many_isolates_failures_per_instance(pool: SandboxPool):
    src = step_body("if action == 'boom':\n    raise KeyError(action)")
    hs = [pool.spawn(src) for _ in range(5)] + [pool.spawn(COUNTER)]
    pool.reset_many([(h, i) for i, h in enumerate(hs)])
    actions = ["ok", "boom", "ok", 42, "ok", "win"]
    results = pool.step_many(list(zip(hs, actions, strict=True)))
    assert results[0][0] == "done" and results[2][0] == "done" and results[4][0] == "done"
    assert isinstance(results[1], EnvCodeError) and "KeyError" in results[1].env_traceback
    assert isinstance(results[3], SandboxRequestError)
    assert results[5] == ("turn 1: win", 1.0, True, False, {"turn": 1})


def test_reset_many_matches_single_resets(pool: SandboxPool):
    hs = [pool.spawn(COUNTER) for _ in range(4)]
    batched = pool.reset_many([(h, s) for h, s in zip(hs, [1, 2, 3, None], strict=True)])
    assert batched[:3] == [pool.reset(h, s) for h, s in zip(hs[:3], [1, 2, 3], strict=True)]
    assert batched[3][0].startswith("secret ")


def test_missing_optional_method(pool: SandboxPool):
    h = pool.spawn(step_returns("('x', 0.0, False, False, {})"))
    with pytest.raises(EnvMethodMissing):
        pool.call(h, "solution")
    assert pool.call(h, "get_tool_schemas") == []


def test_only_allow_listed_methods_can_be_called(pool: SandboxPool):
    h = pool.spawn(COUNTER)
    with pytest.raises(SandboxRequestError, match="may not be called"):
        pool.call(h, "__init__")


def test_bad_requests_get_specific_errors(pool: SandboxPool):
    h = pool.spawn(COUNTER)
    with pytest.raises(SandboxRequestError, match="action must be str"):
        pool.step(h, b"bytes")  # type: ignore[arg-type]
    with pytest.raises(SandboxRequestError, match="64 bits"):
        pool.reset(h, 2**70)
    with pytest.raises(SandboxRequestError, match="seed must be"):
        pool.reset(h, 1.5)  # type: ignore[arg-type]
    with pytest.raises(SandboxRequestError, match="exceeds the limit"):
        pool.step(h, "x" * 70_000)
    with pytest.raises(SandboxRequestError, match="does not belong"):
        pool.step(EnvHandle(9999, 0, "nope", "X"), "a")
    pool.close_env(h)
    pool.close_env(h)  # idempotent
    with pytest.raises(SandboxRequestError, match="was closed"):
        pool.step(h, "a")


def test_closed_pool_refuses_work():
    p = SandboxPool()
    h = p.spawn(COUNTER)
    p.close()
    with pytest.raises(SandboxRequestError, match="closed"):
        p.step(h, "a")
    with pytest.raises(SandboxRequestError, match="closed"):
        p.spawn(COUNTER)


@settings(max_examples=60, deadline=None)
@given(action=st.text(max_size=300))
def test_any_action_text_round_trips_unchanged(pool: SandboxPool, action: str):
    h = _echo_handle(pool)
    obs, reward, terminated, truncated, info = pool.step(h, action)
    assert obs == action and info == {"len": len(action)}
    assert math.isfinite(reward) and not terminated and not truncated


_ECHO = step_returns("(action, 0.5, False, False, {'len': len(action)})", name="EchoEnv")
_echo: dict[int, EnvHandle] = {}


def _echo_handle(pool: SandboxPool) -> EnvHandle:
    if id(pool) not in _echo:
        _echo[id(pool)] = pool.spawn(_ECHO)
    return _echo[id(pool)]


def test_errors_are_spade_errors_with_kind():
    from spade_core.errors import EnvContractError, SpadeError

    assert issubclass(SandboxError, SpadeError)
    assert issubclass(EnvContractViolation, EnvContractError)
    assert SandboxCrash("x").kind == "crash" and SandboxCrash("x").env_traceback is None


def test_idle_workers_stay_warm_up_to_the_limit():
    from spade_sandbox import SandboxLimits

    with SandboxPool(SandboxLimits(max_idle_workers=2)) as p:
        handles = [p.spawn(COUNTER + f"\n# idle {i}\n") for i in range(4)]
        pids = [p.worker_of(h).pid for h in handles]
        for h in handles:
            p.close_env(h)
        alive = {w.pid for w in p.workers()}
        assert alive == set(pids[2:])  # the two most recently idle stay warm
        again = p.spawn(COUNTER + "\n# idle 3\n")
        assert p.worker_of(again).pid == pids[3]  # reused without a cold start
        assert p.step(again, "win")[2] is True


def test_concurrent_spawns_of_new_code_share_one_worker():
    import threading

    with SandboxPool() as p:
        src = COUNTER + "\n# concurrent\n"
        handles: list = []
        threads = [threading.Thread(target=lambda: handles.append(p.spawn(src))) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(handles) == 6
        assert len({h.worker_id for h in handles}) == 1
        assert len({h.instance_id for h in handles}) == 6
