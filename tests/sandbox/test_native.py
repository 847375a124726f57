"""The optional C fast path (``spade_sandbox._fast``) gives exactly what the Python path gives.

Each C function either answers what its pure-Python twin answers, or hands the case back
(``None``, or a code the Python code continues from). The caller-side functions parse bytes
from an untrusted worker, so they are fuzzed with random and mutated frames: the answer is
``None``/a code or exactly the Python path's result, never a crash. The whole sandbox suite
runs with the C path and again with ``SPADE_SANDBOX_NO_C=1`` (see docs/sandbox-security.md).
"""

from __future__ import annotations

import enum
import gc
import importlib
import math
import os
import signal
import struct
import sys
from collections import OrderedDict, namedtuple
from typing import Any

import msgpack
import psutil
import pytest
from envsrc import step_body
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from spade_sandbox.errors import EnvContractViolation, SandboxCrash, SandboxError
from spade_sandbox.pool import check_step_reply
from test_step_frames import FORGE

from spade_sandbox import SandboxPool, channel, native, protocol, worker

try:
    _fast: Any = importlib.import_module("spade_sandbox._fast")
except ImportError as exc:  # not built here: these tests say so, CI fails (first test)
    _fast = None
    _WHY = str(exc)

needs_c = pytest.mark.skipif(_fast is None, reason="the C extension spade_sandbox._fast is not built here")


def test_the_extension_is_built_where_ci_runs():
    """CI builds the package on a clean checkout: there the extension must exist."""
    if _fast is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"spade_sandbox._fast did not build in CI ({_WHY}); is a C compiler installed?")
        pytest.skip(f"spade_sandbox._fast is not built here ({_WHY}); the pure-Python path runs")
    assert native.fast is (None if os.environ.get(native.DISABLE_VARIABLE, "") not in ("", "0") else _fast)


def test_the_disable_variable_is_read_once_and_says_why():
    if native.fast is None:
        assert native.reason.startswith(("disabled by SPADE_SANDBOX_NO_C", "not built"))
    else:
        assert native.reason == "active" and native.active()


@needs_c
def test_the_link_knows_the_codes_of_the_c_step_call():
    assert (channel._NOT_SENT, channel._TIMED_OUT, channel._MALFORMED, channel._STOPPED_READING) == (
        _fast.NOT_SENT, _fast.TIMED_OUT, _fast.MALFORMED, _fast.STOPPED_READING)


def test_workers_serve_with_the_same_path_as_the_pool():
    """The zygote (``python -I -S`` with the path handed over) imports the extension, and
    every worker inherits it: a worker reports the path it serves with."""
    with SandboxPool() as pool:
        h = pool.spawn(TRIVIAL)
        assert pool._links[h.worker_id].c_fast_path is native.active()
        assert pool.step(h, "a") == ("a", 0.5, False, False, {})


TRIVIAL = """
class TrivialEnv:
    def reset(self, seed=None):
        return "start", {}
    def step(self, action):
        return action, 0.5, False, False, {}
"""

# --- generated step results -----------------------------------------------------------------

_any_text = st.text(st.characters(blacklist_categories=()), max_size=80)  # lone surrogates too
_clean_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=300)  # astral chars too


class _Str(str):
    pass


class _Flag(enum.IntEnum):
    NO = 0
    YES = 1


_Result = namedtuple("_Result", "obs reward terminated truncated info")
_Pair = namedtuple("_Pair", "handle action")

_plain = st.tuples(_clean_text, st.floats(allow_nan=False, allow_infinity=False), st.booleans(), st.booleans(),
                   st.just({}).map(dict))
_odd_obs = st.one_of(_any_text, _clean_text.map(_Str), st.integers(), st.none())
_odd_reward = st.one_of(st.floats(), st.integers(-(2**70), 2**70), st.booleans(), st.just("1.0"))
_odd_flag = st.one_of(st.booleans(), st.sampled_from([0, 1, 2, _Flag.YES, _Flag.NO, None, 1.0]))
_odd_info = st.one_of(st.just({}).map(dict), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
                      st.just(OrderedDict()), st.none(), st.lists(st.integers(), max_size=2))
_odd = st.one_of(
    st.tuples(_odd_obs, _odd_reward, _odd_flag, _odd_flag, _odd_info),
    st.tuples(_clean_text, st.floats(), st.booleans(), st.booleans()),  # the 4-tuple form
    st.lists(st.integers(), max_size=6),
    st.none(),
    _plain.map(lambda t: _Result(*t)),  # a tuple subclass
    _plain.map(list),
)
_results = st.lists(st.one_of(_plain, _plain, _plain, _odd), max_size=24)
_limits = st.sampled_from([0, 5, 40, 300, 65536])


def _python_plain(r: Any, limit: int) -> bool:
    """The worker's test for a result that needs no conversion (worker.serve, step_columns)."""
    if type(r) is not tuple or len(r) != 5:
        return False
    o, rw, te, tr, inf = r
    return (type(o) is str and len(o) <= limit and type(rw) is float and math.isfinite(rw)
            and (te is True or te is False) and (tr is True or tr is False) and type(inf) is dict and not inf)


def _msgpack_columns(results: list[Any]) -> bytes:
    obs, rewards, terms, truncs, infos = zip(*results, strict=True)
    return msgpack.Packer(use_bin_type=True).pack([protocol.OK, obs, rewards, terms, truncs, infos, []])


# --- the worker's columnar reply --------------------------------------------------------------


@needs_c
@settings(max_examples=400, deadline=None)
@given(results=_results, limit=_limits)
@example(results=[("x" * 70000, 1.5, True, False, {})], limit=65536)  # over the limit
@example(results=[("x" * 65600, 1.5, True, False, {})], limit=70000)  # a str32
@example(results=[("é" * 200, -0.0, False, True, {})] * 17, limit=300)  # str16, array16
@example(results=[("\ud800", 1.0, False, False, {})], limit=10)  # a lone surrogate
def test_encoded_columns_are_the_bytes_msgpack_writes_or_none(results: list[Any], limit: int):
    encoded = _fast.encode_step_columns(results, limit)
    plain = bool(results) and all(_python_plain(r, limit) for r in results)
    if plain:
        try:
            expected: bytes | None = _msgpack_columns(results)
        except UnicodeEncodeError:  # msgpack refuses lone surrogates; C hands them back
            expected = None
        assert encoded == expected
    else:
        assert encoded is None


@needs_c
@settings(max_examples=150, deadline=None)
@given(results=_results, limit=_limits)
def test_a_worker_answers_a_batch_with_the_same_bytes_either_way(results: list[Any], limit: int):
    """Instances.step_columns with the C encoder and without: packed, the same bytes."""
    queue = list(results)

    class Replay:
        def step(self, action: str) -> Any:
            return queue.pop(0)

    def answer(encoder: Any) -> Any:
        """The packed reply, or the type of what packing it raised (lone surrogates)."""
        queue[:] = results
        table = worker.Instances(Replay, limit)
        table.encode_columns = encoder
        for i in range(len(results)):
            table.new(i)
        reply = table.step_columns(list(range(len(results))), ["a"] * len(results))
        try:
            return reply if type(reply) is bytes else protocol.new_packer().pack(reply)
        except Exception as exc:
            return type(exc)

    assert answer(_fast.encode_step_columns) == answer(None)


# --- the pool's decoding of a columnar reply ----------------------------------------------------


def _python_rows(payload: bytes, n: int, limit: int) -> list[Any] | None:
    """What the msgpack path makes of a reply whose every item is a valid result: the rows,
    or None when it decodes to anything else (an error, a malformed reply, bad items)."""
    try:
        unpacker = protocol.untrusted_unpacker(len(payload) + 16)
        unpacker.feed(payload)
        reply = unpacker.unpack()
        if unpacker.tell() != len(payload):
            return None
    except Exception:
        return None
    if not (type(reply) is list and len(reply) == 7 and reply[0] == "ok" and type(reply[6]) is list and not reply[6]
            and all(type(col) is list and len(col) == n for col in reply[1:6])):
        return None
    rows = []
    for item in zip(*reply[1:6], strict=True):
        try:
            rows.append(check_step_reply(list(item), limit))
        except SandboxError:
            return None
    return rows


def _same_rows(c: list[Any], python: list[Any]) -> bool:
    return [tuple(map(type, r)) for r in c] == [tuple(map(type, r)) for r in python] and c == python


_plain_batches = st.lists(_plain, min_size=1, max_size=20)


@needs_c
@settings(max_examples=300, deadline=None)
@given(results=_plain_batches, limit=_limits)
def test_a_reply_of_plain_results_decodes_to_exactly_the_python_rows(results: list[Any], limit: int):
    payload = _msgpack_columns(results)
    rows = _fast.decode_step_columns(payload, len(results), limit)
    python = _python_rows(payload, len(results), limit)
    if python is None:  # an observation over the limit: the per-item checks say which
        assert rows is None
    else:
        assert rows is not None and _same_rows(rows, python)


@needs_c
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(results=_plain_batches, limit=_limits, data=st.data())
def test_a_mutated_reply_decodes_to_none_or_exactly_the_python_rows(results: list[Any], limit: int, data: Any):
    payload = bytearray(_msgpack_columns(results))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(payload)))
        how = data.draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate"]))
        if how == "truncate":
            del payload[at:]
        elif how == "delete":
            del payload[at : at + data.draw(st.integers(1, 9))]
        elif how == "insert":
            payload[at:at] = data.draw(st.binary(min_size=1, max_size=9))
        elif at < len(payload):
            payload[at] = payload[at] ^ (1 << data.draw(st.integers(0, 7))) if how == "flip" else data.draw(
                st.sampled_from([0x00, 0x7F, 0x80, 0x90, 0xA0, 0xC0, 0xC1, 0xC2, 0xC3, 0xCA, 0xCB, 0xD9, 0xDA,
                                 0xDB, 0xDC, 0xDD, 0xFF]))
    n = data.draw(st.sampled_from([len(results), len(results) + 1, max(1, len(results) - 1)]))
    rows = _fast.decode_step_columns(bytes(payload), n, limit)
    if rows is not None:
        python = _python_rows(bytes(payload), n, limit)
        assert python is not None and _same_rows(rows, python)


@needs_c
@settings(max_examples=300, deadline=None)
@given(payload=st.binary(max_size=200), n=st.integers(1, 40))
def test_random_bytes_decode_to_none_or_exactly_the_python_rows(payload: bytes, n: int):
    rows = _fast.decode_step_columns(payload, n, 65536)
    if rows is not None:
        assert _same_rows(rows, _python_rows(payload, n, 65536) or [])


@needs_c
@pytest.mark.parametrize("payload", [
    b"\x97\xa2ok\xdd\xff\xff\xff\xff",  # an array of 4 billion items, 0 bytes of them
    b"\x97\xa2ok\x91\xdb\xff\xff\xff\xff",  # a str of 4 GiB announced, none there
    b"\x97\xa2ok\x91\xa1x\x91\xcb\x7f\xf0\0\0\0\0\0\0\x91\xc2\x91\xc2\x91\x80\x90",  # an infinite reward
    b"\x97\xa2ok\x91\xa1x\x91\xcb\0\0\0\0\0\0\0\0\x91\xc2\x91\xc2\x91\x80\x91\x90",  # one error listed
    b"\x97\xa2ok\x91\xa1x\x91\xcb\0\0\0\0\0\0\0\0\x91\xc2\x91\xc2\x91\x80\x90\x90",  # bytes after the value
    b"\x97\xa2ok\x91\xa2\xff\xfe\x91\xcb\0\0\0\0\0\0\0\0\x91\xc2\x91\xc2\x91\x80\x90",  # invalid UTF-8
    b"",
])
def test_hostile_replies_go_to_the_checked_path(payload: bytes):
    assert _fast.decode_step_columns(payload, 1, 65536) is None


# --- the pool's split of a step batch -------------------------------------------------------------


def _python_split(items: Any, limit: int) -> Any:
    """SandboxPool._group_steps' pure-Python checks and columns (None: item by item)."""
    try:
        if not set(map(type, items)) <= {tuple, list} or set(map(len, items)) != {2}:
            return None
        handles = list(map(lambda x: x[0], items))
        actions = list(map(lambda x: x[1], items))
    except (TypeError, KeyError, IndexError):
        return None
    if set(map(type, actions)) != {str} or max(map(len, actions)) > limit:
        return None
    return handles, actions


_item = st.one_of(
    st.tuples(st.integers(), _any_text), st.tuples(st.integers(), _any_text).map(list),
    st.tuples(st.integers(), _clean_text.map(_Str)), st.tuples(st.integers(), st.integers()),
    st.tuples(st.integers()), st.tuples(st.integers(), _any_text, _any_text), st.none(), _any_text,
    st.tuples(st.integers(), _any_text).map(lambda t: _Pair(*t)),  # a tuple subclass
)


@needs_c
@settings(max_examples=400, deadline=None)
@given(items=st.lists(st.one_of(st.tuples(st.integers(), _any_text), _item), min_size=1, max_size=12),
       limit=_limits, as_tuple=st.booleans())
def test_a_batch_splits_into_the_python_columns_or_none(items: list[Any], limit: int, as_tuple: bool):
    batch = tuple(items) if as_tuple else items
    split = _fast.split_steps(batch, limit)
    python = _python_split(batch, limit)
    if split is None:
        assert python is None
    else:
        assert python is not None and split[0] == python[0] and split[1] == python[1]
        assert all(a is b for a, b in zip(split[1], python[1], strict=True))


# --- the pool's single step ---------------------------------------------------------------------


class _Pipes:
    """The pool's ends of a request pipe (non-blocking writes, as WorkerLink sets) and a
    reply pipe, with the worker's ends kept here."""

    def __init__(self) -> None:
        self.req_r, self.req_w = os.pipe()
        self.rep_r, self.rep_w = os.pipe()
        os.set_blocking(self.req_w, False)
        self.buf = bytearray(65536)

    def call(self, iid: int = 7, action: str = "act", timeout_ms: int = 2000) -> Any:
        return _fast.step_call(self.req_w, self.rep_r, self.buf, iid, action, timeout_ms)

    def sent(self) -> bytes:
        os.set_blocking(self.req_r, False)
        try:
            return os.read(self.req_r, 1 << 20)
        except BlockingIOError:
            return b""

    def close(self) -> None:
        for fd in (self.req_r, self.req_w, self.rep_r, self.rep_w):
            try:
                os.close(fd)
            except OSError:
                pass


@pytest.fixture
def pipes():
    p = _Pipes()
    yield p
    p.close()


def _python_step_received(reply: bytes) -> Any:
    """WorkerLink._step_received's answer to one read of ``reply`` (whole-frame cases; the
    code the C call returns for the others: the count of bytes, or MALFORMED)."""
    have = len(reply)
    if have > 4 and have == protocol.HEADER.unpack_from(reply)[0] + 4 and reply[4] == protocol.STEP_MARK:
        if have < 14:
            return "malformed"
        _, flags, reward = protocol.STEP_REPLY.unpack_from(reply, 4)
        try:
            obs = str(reply[14:], "utf-8")
        except UnicodeDecodeError:
            return "malformed"
        if flags > 3:
            return "malformed"
        return obs, reward, flags & 1 == 1, flags & 2 == 2, {}
    return have


def _bitwise(answer: Any) -> Any:
    """``answer`` with its reward as its float64 bytes (a NaN equals itself then)."""
    if type(answer) is tuple:
        return (answer[0], struct.pack(">d", answer[1]), *answer[2:])
    return answer


def _c_answer(got: Any) -> Any:
    return "malformed" if got == _fast.MALFORMED else got


@needs_c
@settings(max_examples=300, deadline=None)
@given(obs=_clean_text, reward=st.floats(), flags=st.integers(0, 3), action=_clean_text,
       iid=st.integers(-(2**63), 2**63 - 1))
def test_a_binary_reply_parses_to_the_python_tuple(obs: str, reward: float, flags: int, action: str, iid: int):
    p = _Pipes()
    try:
        os.write(p.rep_w, protocol.encode_step_reply(obs, reward, bool(flags & 1), bool(flags & 2)))
        got = p.call(iid, action)
        assert p.sent() == protocol.encode_step_request(iid, action)
        expected = _python_step_received(protocol.encode_step_reply(obs, reward, bool(flags & 1), bool(flags & 2)))
        assert got[0] == expected[0] and got[2:] == expected[2:] and type(got[1]) is float
        assert struct.pack(">d", got[1]) == struct.pack(">d", expected[1])  # nan payloads too
    finally:
        p.close()


_valid_reply = st.builds(lambda o, r, f: protocol.encode_step_reply(o, r, bool(f & 1), bool(f & 2)),
                         _clean_text, st.floats(allow_nan=False), st.integers(0, 3))


@needs_c
@settings(max_examples=500, deadline=None)
@given(reply=st.one_of(st.binary(min_size=1, max_size=64), _valid_reply), data=st.data())
def test_any_reply_bytes_give_the_python_answer_or_a_code_to_continue_from(reply: bytes, data: Any):
    reply = bytearray(reply)
    for _ in range(data.draw(st.integers(0, 3))):
        at = data.draw(st.integers(0, len(reply) - 1))
        reply[at] = data.draw(st.integers(0, 255))
    p = _Pipes()
    try:
        os.write(p.rep_w, bytes(reply))
        got = p.call()
        assert _bitwise(_c_answer(got)) == _bitwise(_python_step_received(bytes(reply)))
        if isinstance(got, int) and got > 0:
            assert p.buf[:got] == reply  # the Python path continues from these bytes
    finally:
        p.close()


@needs_c
def test_no_reply_in_time_is_a_timeout_code(pipes: _Pipes):
    assert pipes.call(timeout_ms=20) == _fast.TIMED_OUT


@needs_c
def test_a_closed_reply_channel_is_code_zero(pipes: _Pipes):
    os.close(pipes.rep_w)
    assert pipes.call() == 0


@needs_c
def test_a_closed_request_channel_is_a_failed_write(pipes: _Pipes):
    os.close(pipes.req_r)
    assert pipes.call() == _fast.WRITE_FAILED


@needs_c
def test_a_full_request_pipe_sends_nothing_and_leaves_it_to_python(pipes: _Pipes):
    while True:
        try:
            os.write(pipes.req_w, b"x" * 4096)
        except BlockingIOError:
            break
    assert pipes.call() == _fast.NOT_SENT


@needs_c
@pytest.mark.parametrize("action", ["\ud800", "a" * 5000, _Str("a")])
def test_actions_msgpack_or_a_long_write_must_carry_are_not_sent(pipes: _Pipes, action: str):
    assert pipes.call(action=action) == _fast.NOT_SENT
    assert pipes.sent() == b""


@needs_c
def test_a_signal_during_the_wait_runs_its_handler_and_the_wait_goes_on(pipes: _Pipes):
    seen = []
    previous = signal.signal(signal.SIGALRM, lambda *a: seen.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.02)
        assert pipes.call(timeout_ms=300) == _fast.TIMED_OUT
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert seen == [1]


class _Alarm(Exception):
    pass


def _raise_alarm(*args: Any) -> None:
    raise _Alarm


@needs_c
def test_what_a_signal_handler_raises_during_the_wait_propagates(pipes: _Pipes):
    previous = signal.signal(signal.SIGALRM, _raise_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.02)
        with pytest.raises(_Alarm):
            pipes.call(timeout_ms=5000)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --- the worker's loop ------------------------------------------------------------------------


class _Budget:
    request = 0


class _Stepper:
    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.calls: list[str] = []

    def step(self, action: str) -> Any:
        self.calls.append(action)
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


def _serve(frames: list[bytes], answer: Any, iid: int = 0, limit: int = 65536) -> tuple[Any, _Stepper, int, bytes]:
    """Feed ``frames`` (then EOF) to serve_steps until it returns; what it returned, the
    instance, the requests counted and what it wrote back."""
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    try:
        for frame in frames:
            os.write(req_w, frame)
        os.close(req_w)
        inst = _Stepper(answer)
        budget = _Budget()
        budget.request = 0
        buf = bytearray(65536)
        got = _fast.serve_steps(req_r, rep_w, buf, {iid: inst}, limit, budget)
        os.set_blocking(rep_r, False)
        try:
            written = os.read(rep_r, 1 << 20)
        except BlockingIOError:
            written = b""
        return got, inst, budget.request, written
    finally:
        for fd in (req_r, rep_r, rep_w):
            os.close(fd)


@needs_c
@settings(max_examples=150, deadline=None)
@given(obs=_clean_text, reward=st.floats(allow_nan=False, allow_infinity=False), te=st.booleans(),
       tr=st.booleans(), action=_clean_text)
def test_a_plain_step_is_answered_with_the_python_binary_reply(obs, reward, te, tr, action):
    got, inst, counted, written = _serve([protocol.encode_step_request(0, action)], (obs, reward, te, tr, {}))
    assert got == (0, 0)  # then the channel closed
    assert inst.calls == [action] and counted == 1
    assert written == protocol.encode_step_reply(obs, reward, te, tr)


@needs_c
@pytest.mark.parametrize("answer", [
    ("ok", 1, False, False, {}), ("ok", 1.0, 0, False, {}), ("ok", math.inf, False, False, {}),
    ("ok", math.nan, False, False, {}), (_Str("ok"), 1.0, False, False, {}), ("ok", 1.0, False, False, {"a": 1}),
    ("ok", 1.0, False, False), ["ok", 1.0, False, False, {}], ("\udc80", 1.0, False, False, {}),
    ("x" * 11, 1.0, False, False, {}), ("ok", 1.0, False, False, OrderedDict()), None,
])
def test_a_result_that_needs_conversion_goes_back_to_python_after_one_call(answer: Any):
    got, inst, counted, written = _serve([protocol.encode_step_request(0, "a")], answer, limit=10)
    assert got[0] == 1 and got[1] is answer
    assert inst.calls == ["a"] and counted == 1 and written == b""


@needs_c
def test_a_step_that_raises_goes_back_to_python_with_its_traceback():
    boom = ValueError("boom")
    got, inst, counted, written = _serve([protocol.encode_step_request(0, "a")], boom)
    assert got[0] == 2 and got[1] is boom and boom.__traceback__ is not None
    assert inst.calls == ["a"] and counted == 1 and written == b""


@needs_c
@pytest.mark.parametrize("frame", [
    protocol.encode_step_request(5, "a"),  # an unknown instance: Python says so
    protocol.encode(["ping"]),  # a msgpack request
    protocol.encode_step_request(0, "a")[:-1],  # a partial frame
    protocol.encode_step_request(0, "a") + b"x",  # more than one frame
    protocol.STEP_REQUEST.pack(10, protocol.STEP_MARK, 0) + b"\xff",  # invalid UTF-8
])
def test_any_other_frame_goes_back_to_python_uncounted(frame: bytes):
    got, inst, counted, written = _serve([frame], ("ok", 1.0, False, False, {}))
    assert got == (0, len(frame))
    assert inst.calls == [] and counted == 0 and written == b""


@needs_c
def test_a_long_observation_is_written_whole():
    got, inst, counted, written = _serve([protocol.encode_step_request(0, "a")], ("é" * 9000, 1.0, True, True, {}))
    assert written == protocol.encode_step_reply("é" * 9000, 1.0, True, True)


@needs_c
def test_what_a_signal_handler_raises_while_the_worker_waits_propagates():
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    previous = signal.signal(signal.SIGALRM, _raise_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.02)
        with pytest.raises(_Alarm):
            _fast.serve_steps(req_r, rep_w, bytearray(65536), {}, 100, _Budget())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        for fd in (req_r, req_w, rep_r, rep_w):
            os.close(fd)


# --- no leaks -----------------------------------------------------------------------------------


@needs_c
def test_repeated_calls_leak_no_references_and_no_memory():
    results = [("obs", 0.25, False, True, {})] * 64
    payload = _msgpack_columns(results)
    action = "act"
    answer = ("ok", 1.0, False, False, {})
    inst = _Stepper(answer)
    live = {0: inst}
    # Exactly one step request fits: the loop steps it, then reads the ping and returns.
    buf = bytearray(len(protocol.encode_step_request(0, action)))
    budget = _Budget()
    batch = [(inst, action)] * 32
    watched = [results, payload, action, answer, inst, live, buf, budget, results[0], results[0][4], batch, batch[0]]
    p = _Pipes()
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    reply = protocol.encode_step_reply("ok", 1.0, False, False)

    def once() -> None:
        assert _fast.split_steps(batch, 100) is not None
        assert _fast.encode_step_columns(results, 100) is not None
        assert _fast.decode_step_columns(payload, 64, 100) is not None
        assert _fast.decode_step_columns(payload[:-1], 64, 100) is None
        os.write(p.rep_w, reply)
        assert type(p.call(0, action)) is tuple
        os.read(p.req_r, 4096)
        os.write(req_w, protocol.encode_step_request(0, action))
        os.write(req_w, protocol.encode(["ping"]))  # returns after the step
        inst.calls.clear()
        assert _fast.serve_steps(req_r, rep_w, buf, live, 100, budget)[0] == 0
        assert inst.calls == [action]
        assert os.read(rep_r, 4096) == reply

    try:
        for _ in range(200):
            once()
        gc.collect()
        before = [sys.getrefcount(x) for x in watched]
        rss = psutil.Process().memory_info().rss
        for _ in range(20_000):
            once()
        gc.collect()
        assert [sys.getrefcount(x) for x in watched] == before
        assert psutil.Process().memory_info().rss - rss < 4 * 2**20
    finally:
        p.close()
        for fd in (req_r, req_w, rep_r, rep_w):
            os.close(fd)


# --- end to end ---------------------------------------------------------------------------------


def test_a_pool_answers_the_same_through_either_path_end_to_end():
    """Whichever path this process runs (the suite runs under both), plain and unusual
    results come back as the documented values and errors."""
    src = """
class MixedEnv:
    def reset(self, seed=None):
        return "start", {}
    def step(self, action):
        if action == "raise":
            raise KeyError("k")
        if action == "inf":
            return "o", float("inf"), False, False, {}
        if action == "info":
            return "o", 2, True, False, {"n": 1}
        return action * 2, 0.5, action == "end", False, {}
"""
    with SandboxPool() as pool:
        hs = [pool.spawn(src) for _ in range(5)]
        assert pool.step(hs[0], "😀\u00e9") == ("😀\u00e9" * 2, 0.5, False, False, {})
        assert pool.step(hs[0], "info") == ("o", 2.0, True, False, {"n": 1})
        with pytest.raises(EnvContractViolation):
            pool.step(hs[0], "inf")
        out = pool.step_many([(h, a) for h, a in zip(hs, ["a", "end", "raise", "info", "b"], strict=True)])
        assert out[0] == ("aa", 0.5, False, False, {}) and out[1] == ("endend", 0.5, True, False, {})
        assert isinstance(out[2], SandboxError) and "KeyError" in str(out[2])
        assert out[3] == ("o", 2.0, True, False, {"n": 1}) and out[4] == ("bb", 0.5, False, False, {})
        assert pool.step_many([(h, "x") for h in hs]) == [("xx", 0.5, False, False, {})] * 5
        assert pool.step_many([(hs[1], "y"), (hs[3], "z")]) == [("yy", 0.5, False, False, {}),
                                                                ("zz", 0.5, False, False, {})]


@pytest.mark.parametrize("forged", ["_forge(7, 0.0, b'o')", "_forge(0, 0.0, b'\\xff\\xfe')"])
def test_a_malformed_binary_reply_kills_the_worker_with_the_message_of_the_python_path(
    os_layer_pool: SandboxPool, forged: str
):
    h = os_layer_pool.spawn(FORGE + step_body(forged, name="ForgerEnv"))
    pid = os_layer_pool.worker_of(h).pid
    with pytest.raises(SandboxCrash) as info:
        os_layer_pool.step(h, "forge")
    assert str(info.value).startswith(
        f"worker {pid} sent an undecodable reply (a malformed binary step reply) during step(); it was killed")
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
