"""The fast paths give the same answers as the careful ones.

Single calls decode a reply straight from the first read, batches are validated with
whole-column operations on both sides, and the static check remembers sources that
passed. Each shortcut must agree with the per-item path it replaces, and everything
unusual must still reach the specific error.
"""

from __future__ import annotations

import math

import pytest
from envsrc import COUNTER, step_body
from hypothesis import given, settings
from hypothesis import strategies as st
from spade_sandbox.errors import SandboxCrash, SandboxRequestError, StaticCheckError
from spade_sandbox.static import check_source
from spade_sandbox.worker_instances import Instances

from spade_sandbox import SandboxPool

# --- the worker's columnar step ---------------------------------------------------------

_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), st.floats(), st.text(max_size=8)
)
_infos = st.one_of(
    st.just({}),
    st.dictionaries(st.text(max_size=4), _scalars, max_size=3),
    st.dictionaries(st.text(max_size=4), st.lists(_scalars, max_size=3), max_size=2),
    st.none(),
    st.integers(),
)
_results = st.one_of(
    st.tuples(
        st.one_of(st.text(max_size=20), st.integers()),
        st.one_of(st.floats(), st.integers(-5, 5), st.booleans(), st.text(max_size=3)),
        st.one_of(st.booleans(), st.integers(0, 2), st.floats(0, 1)),
        st.one_of(st.booleans(), st.integers(0, 1)),
        _infos,
    ),
    st.tuples(st.text(max_size=5), st.floats(0, 1), st.booleans(), _infos),
    st.just("not a tuple"),
    st.just(ValueError("boom")),
)


class _Scripted:
    """An env whose step returns (or raises) whatever the test scripted for it."""

    def __init__(self, result: object) -> None:
        self.result = result

    def step(self, action: str) -> object:
        if isinstance(self.result, BaseException):
            raise self.result
        return self.result


def _table(results: list[object]) -> Instances:
    table = Instances(_Scripted, max_output_chars=64)
    table.live = {i: _Scripted(r) for i, r in enumerate(results)}
    return table


def _comparable(reply: list) -> list:
    """Columns as lists, NaN-free (NaN never reaches a column: it is a contract error)."""
    ok, *columns, errors = reply
    return [ok, *[list(c) for c in columns], [e[:3] for e in errors]]


@settings(max_examples=50, deadline=None)
@given(st.lists(_results, min_size=1, max_size=12))
def test_columnar_step_agrees_with_stepping_one_by_one(results: list[object]):
    iids = list(range(len(results)))
    actions = ["a"] * len(results)
    fast = _table(results).step_columns(iids, actions)
    careful = _table(results)._step_items(iids, actions)
    assert _comparable(fast) == _comparable(careful)
    for reward in fast[2]:
        assert type(reward) is float and math.isfinite(reward)


def test_columnar_step_reports_unknown_instances_in_place():
    table = _table([("x", 1.0, True, False, {})])
    reply = table.step_columns([0, 7], ["a", "b"])
    assert list(reply[1]) == ["x", ""]
    assert [e[0] for e in reply[6]] == [1]
    assert reply[6][0][1:3] == ["err", "request"]


def test_a_batch_naming_one_instance_twice_converts_each_result_before_the_next_step():
    class Shared:
        def __init__(self) -> None:
            self.state = {"n": 0}

        def step(self, action: str) -> tuple:
            self.state["n"] += 1
            return "o", 0.0, False, False, self.state  # the same dict object every time

    table = Instances(Shared, max_output_chars=64)
    table.live = {0: Shared()}
    reply = table.step_columns([0, 0, 0], ["a", "b", "c"])
    assert [info["n"] for info in reply[5]] == [1, 2, 3]


# --- the pool's batch validation --------------------------------------------------------


def test_a_batch_with_bad_items_answers_the_good_ones(pool: SandboxPool):
    h = pool.spawn(COUNTER)
    pool.reset(h, seed=1)
    too_long = "x" * (pool.limits.max_action_chars + 1)
    results = pool.step_many([(h, "a"), (h, 3), (h, too_long), ("not a handle", "a"), (h, "b")])  # type: ignore[list-item]
    assert isinstance(results[0], tuple) and isinstance(results[4], tuple)
    assert isinstance(results[1], SandboxRequestError) and "must be str" in results[1].message
    assert isinstance(results[2], SandboxRequestError) and "exceeds the limit" in results[2].message
    assert isinstance(results[3], SandboxRequestError) and "EnvHandle" in results[3].message


def test_a_batch_with_a_closed_instance_reports_it_and_steps_the_rest(pool: SandboxPool):
    a, b = pool.spawn(COUNTER), pool.spawn(COUNTER)
    pool.reset_many([(a, 1), (b, 2)])
    pool.close_env(a)
    results = pool.step_many([(a, "x"), (b, "y")])
    assert isinstance(results[0], SandboxRequestError) and "was closed" in results[0].message
    assert isinstance(results[1], tuple)


def test_an_empty_batch_is_an_empty_answer(pool: SandboxPool):
    assert pool.step_many([]) == []


# --- replies that are not ["ok", value] --------------------------------------------------

SEND_FRAME = '''
import os, stat

def _is_reply_pipe(f):
    # The worker answers on the write end of a pipe (an empty write succeeds only there).
    try:
        return stat.S_ISFIFO(os.fstat(f).st_mode) and os.write(f, b"") == 0
    except OSError:
        return False
'''


@pytest.mark.parametrize("frame", ["bytes([0, 0, 0, 4, 0x91, 0xa2]) + b'ok'", "bytes([0, 0, 0, 6, 0x93, 0xa2]) + b'ok' + bytes([0xc0, 0xc0])"])
def test_an_ok_reply_without_exactly_one_value_breaks_the_protocol(os_layer_pool: SandboxPool, frame: str):
    body = "fd = next(f for f in range(64) if _is_reply_pipe(f))\nos.write(fd, " + frame + ")\nos._exit(0)"
    h = os_layer_pool.spawn(SEND_FRAME + step_body(body, name="ShortReplyEnv"))
    with pytest.raises(SandboxCrash, match="broke the protocol"):
        os_layer_pool.step(h, "go")


# --- the static check's memory of passing sources ------------------------------------------


def test_a_passing_source_is_answered_from_memory_with_a_fresh_report(monkeypatch: pytest.MonkeyPatch):
    source = COUNTER + "\n# remembered\n"
    first = check_source(source)
    assert first.ok
    import spade_sandbox.static as static

    def no_parsing(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(static, "_check", no_parsing)
    again = check_source(source)
    assert again == first and again is not first and again.findings is not first.findings


def test_memory_of_a_source_is_per_allow_list(pool: SandboxPool):
    source = COUNTER + "\nimport csv\n"
    assert not check_source(source).ok
    assert check_source(source, ["csv"]).ok
    assert not check_source(source).ok
    with pytest.raises(StaticCheckError):
        pool.spawn(source)


@settings(max_examples=40, deadline=None)
@given(st.text(max_size=60))
def test_checking_twice_gives_the_same_report(source: str):
    assert check_source(source) == check_source(source)


def test_a_step_shadowed_on_the_instance_is_the_one_a_batch_calls():
    class Shadowed:
        def __init__(self) -> None:
            self.step = lambda action: ("shadow " + action, 1.0, True, False, {})

        def step(self, action: str) -> tuple:
            return "class", 0.0, False, False, {}

    table = Instances(Shadowed, max_output_chars=64)
    table.live = {0: Shadowed(), 1: Shadowed()}
    reply = table.step_columns([0, 1], ["a", "b"])
    assert list(reply[1]) == ["shadow a", "shadow b"] and reply[6] == []


def test_a_batch_goes_on_after_a_step_that_raises_and_keeps_the_order():
    class Picky:
        def step(self, action: str) -> tuple:
            if action == "bad":
                raise ValueError("no")
            return action, 0.5, False, False, {}

    table = Instances(Picky, max_output_chars=64)
    table.live = {i: Picky() for i in range(5)}
    reply = table.step_columns([0, 1, 2, 3, 4], ["a", "bad", "c", "bad", "e"])
    assert list(reply[1]) == ["a", "", "c", "", "e"]
    assert [e[0] for e in reply[6]] == [1, 3] and all("ValueError" in e[3] for e in reply[6])


# --- a batch of the same handles, again ------------------------------------------------------

REPEAT_ECHO = step_body("return action + '!', 0.0, False, False, {}", name="RepeatEchoEnv")


def test_repeating_a_batch_notices_closed_instances_and_dead_workers(pool: SandboxPool):
    import os
    import signal

    handles = [pool.spawn(REPEAT_ECHO) for _ in range(4)]
    items = [(h, "x") for h in handles]
    assert [r[0] for r in pool.step_many(items)] == ["x!"] * 4
    pool.close_env(handles[1])
    again = pool.step_many(items)  # the very same handle objects: the remembered grouping
    assert isinstance(again[1], SandboxRequestError) and "closed" in str(again[1])
    assert [again[i][0] for i in (0, 2, 3)] == ["x!"] * 3
    os.kill(pool.worker_of(handles[0]).pid, signal.SIGKILL)
    lost = pool.step_many(items)
    assert all(isinstance(r, (SandboxCrash, SandboxRequestError)) for r in lost)
    assert any(isinstance(r, SandboxCrash) for r in lost)
    fresh = pool.spawn(REPEAT_ECHO)
    assert pool.step_many([(fresh, "y")])[0][0] == "y!"


def test_a_batch_of_equal_but_distinct_handles_is_the_same_batch(pool: SandboxPool):
    import dataclasses

    handles = [pool.spawn(REPEAT_ECHO + "\n# distinct\n") for _ in range(3)]
    assert [r[0] for r in pool.step_many([(h, "a") for h in handles])] == ["a!"] * 3
    copies = [dataclasses.replace(h) for h in handles]
    assert [r[0] for r in pool.step_many([(h, "b") for h in copies])] == ["b!"] * 3
