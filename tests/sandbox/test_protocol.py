"""The wire protocol, and the pool's defence against a worker that lies on it."""

from __future__ import annotations

import socket
import threading

import msgpack
import pytest
from envsrc import COUNTER, step_body
from hypothesis import given, settings
from hypothesis import strategies as st
from spade_sandbox.errors import SandboxCrash, SandboxRequestError

from spade_sandbox import SandboxPool, protocol

plain = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(max_size=50)
    | st.binary(max_size=50),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(message=plain, chunk=st.integers(1, 64))
def test_frames_round_trip_whatever_the_chunking(message, chunk: int):
    a, b = socket.socketpair()
    try:
        data = protocol.encode(message)
        writer = threading.Thread(target=lambda: [a.sendall(data[i : i + chunk]) for i in range(0, len(data), chunk)])
        writer.start()
        payload = protocol.recv_frame(b)
        writer.join()
        assert protocol.decode_untrusted(payload, max_str_len=1 << 20) == message
    finally:
        a.close()
        b.close()


@settings(max_examples=100, deadline=None)
@given(messages=st.lists(plain, min_size=1, max_size=4), chunk=st.integers(1, 64))
def test_frames_cross_a_pipe_channel_whatever_the_chunking(messages, chunk: int):
    pool_end, worker_end = protocol.pipe_channels()
    try:
        reader = protocol.FrameReader(worker_end, size=16)  # tiny buffer: frames must grow it
        for message in messages:
            data = protocol.encode(message)
            writer = threading.Thread(
                target=lambda data=data: [pool_end.sendall(data[i : i + chunk]) for i in range(0, len(data), chunk)]
            )
            writer.start()
            payload = reader.read()
            writer.join()
            assert protocol.decode_untrusted(payload, max_str_len=1 << 20) == message
    finally:
        pool_end.close()
        worker_end.close()


def test_a_pipe_channel_that_is_not_read_times_out_instead_of_blocking():
    import os

    pool_end, worker_end = protocol.pipe_channels()
    try:
        os.set_blocking(pool_end.wfd, False)
        with pytest.raises(TimeoutError):
            pool_end.sendall(bytes(4 << 20), timeout=0.05)
    finally:
        pool_end.close()
        worker_end.close()
    assert pool_end.closed and worker_end.closed


def test_untrusted_decoding_refuses_extension_types_and_big_strings():
    with pytest.raises(ValueError):
        protocol.decode_untrusted(msgpack.packb(msgpack.ExtType(5, b"x")), max_str_len=100)
    with pytest.raises(ValueError):
        protocol.decode_untrusted(msgpack.packb("x" * 200), max_str_len=100)


def test_oversized_frame_is_refused_before_reading_it():
    a, b = socket.socketpair()
    a.sendall(protocol.HEADER.pack(1 << 30))
    with pytest.raises(protocol.FrameTooLarge):
        protocol.recv_frame(b, max_bytes=1 << 20)
    a.close()
    b.close()


# A worker is untrusted: with the static layer off, env code can write to its own reply pipe.
FIND_SOCKET = (
    "import os, stat\n"
    "fd = next(f for f in range(64) if _is_reply_pipe(f))\n"
)
HELPERS = '''
import os, stat

def _is_reply_pipe(f):
    # The worker answers on the write end of a pipe (an empty write succeeds only there).
    try:
        return stat.S_ISFIFO(os.fstat(f).st_mode) and os.write(f, b"") == 0
    except OSError:
        return False
'''


@pytest.mark.parametrize(
    ("payload", "needle"),
    [
        ("os.write(fd, (1 << 31).to_bytes(4, 'big'))", "reply"),
        ("os.write(fd, (5).to_bytes(4, 'big') + bytes([0xc1] * 5))", "undecodable|more than one reply"),
        ("os.write(fd, bytes(2))\nos._exit(0)", r"reply frame was cut short \(2 bytes of a 4-byte header\) and it ended its own process \(exit code 0\)"),
    ],
)
def test_a_lying_worker_is_killed_and_the_pool_carries_on(os_layer_pool: SandboxPool, payload: str, needle: str):
    h = os_layer_pool.spawn(HELPERS + step_body(FIND_SOCKET + payload, name="LiarEnv"))
    with pytest.raises(SandboxCrash, match=needle):
        os_layer_pool.step(h, "lie")
    with pytest.raises(SandboxCrash, match="instance lost"):
        os_layer_pool.step(h, "again")
    assert os_layer_pool.reset(os_layer_pool.spawn(COUNTER), seed=1)[0].startswith("secret ")


@settings(max_examples=30, deadline=None)
@given(actions=st.lists(st.one_of(st.text(max_size=40), st.integers(), st.none()), min_size=1, max_size=12))
def test_step_many_results_line_up_with_requests(pool: SandboxPool, actions: list):
    handles = _echoes(pool)
    items = [(handles[i % len(handles)], a) for i, a in enumerate(actions)]
    for (_, action), result in zip(items, pool.step_many(items), strict=True):
        if isinstance(action, str):
            assert result[0] == action
        else:
            assert isinstance(result, SandboxRequestError)


_ECHO = step_body("return action, 0.0, False, False, {}", name="EchoEnv")
_handles: dict[int, list] = {}


def _echoes(pool: SandboxPool) -> list:
    if id(pool) not in _handles:
        _handles[id(pool)] = [pool.spawn(_ECHO) for _ in range(3)] + [pool.spawn(_ECHO + "\n# v2\n")]
    return _handles[id(pool)]


def test_threads_share_a_pool_safely(pool: SandboxPool):
    handles = [pool.spawn(COUNTER) for _ in range(4)] + [pool.spawn(COUNTER + "\n# t\n") for _ in range(4)]
    errors: list[BaseException] = []

    def play(h) -> None:
        try:
            pool.reset(h, seed=1)
            for turn in range(1, 101):
                assert pool.step(h, "x")[4] == {"turn": turn}
        except BaseException as exc:  # collected and re-raised by the test thread
            errors.append(exc)

    threads = [threading.Thread(target=play, args=(h,)) for h in handles]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
