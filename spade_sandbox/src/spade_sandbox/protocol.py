"""Wire protocol between the pool, the zygote and workers.

A frame is a 4-byte big-endian length followed by that many bytes of msgpack. Nothing is
ever pickled. The pool and the zygote talk over a socketpair (descriptors travel on it);
the pool and each worker talk over a :class:`PipeChannel`, two pipes, because a pipe round
trip costs about half of a unix-socket one on the kernels we measured (see
``bench/bench_sandbox.py``, "raw transport" rows). Requests are arrays ``[op, *args]``; replies are ``["ok", value]`` or
``["err", kind, message, traceback]``. Batched requests reply ``["ok", [reply, ...]]``
with one reply per item, so one failing instance does not fail the others.

This module is imported by workers: standard library and msgpack only.
"""

from __future__ import annotations

import functools
import os
import select
import socket
import struct
from typing import Any

import msgpack

#: What a worker runs, the key of its pool: (code hash, class name, allowed modules,
#: isolation key). Instances whose keys differ never share a worker.
WorkerKey = tuple[str, str, tuple[str, ...], str]

HEADER = struct.Struct(">I")
#: Hard upper bound of one frame; the pool configures a lower one (SandboxLimits).
MAX_FRAME_BYTES = 256 * 1024 * 1024

OK = "ok"
ERR = "err"

#: First payload byte of a binary step frame. 0xC1 is the one byte msgpack never uses, so
#: a receiver tells a binary step frame from a msgpack one by it. Single ``step`` calls use
#: these frames (the pool's ``step`` and the worker's plain-result reply): packing and
#: decoding them is a few ``struct`` and UTF-8 operations instead of msgpack's, which at
#: a few microseconds a call is most of what is left above the pipe itself.
STEP_MARK = 0xC1
#: Binary step request, header included: length, mark, instance id (int64); the action
#: follows as UTF-8.
STEP_REQUEST = struct.Struct(">IBq")
#: Binary step reply body: mark, flags (1: terminated, 2: truncated), reward (float64); the
#: observation follows as UTF-8. Only for a result that needs no conversion: str
#: observation, float reward, bool flags, empty info (the info is ``{}``).
STEP_REPLY = struct.Struct(">BBd")
#: Frame header and binary step reply body in one.
STEP_REPLY_HEAD = struct.Struct(">IBBd")

# A worker's exit codes, for when it could not say why it ended (defined here, not in the
# worker module, so that the pool can read them without importing the worker's layers).
EXIT_MEMORY = 81
EXIT_CPU = 82
EXIT_POLICY = 83
EXIT_UNAVAILABLE = 84
EXIT_LOAD = 85
EXIT_PROTOCOL = 86
#: Exit code -> (error kind, explanation).
EXIT_CODES: dict[int, tuple[str, str]] = {
    EXIT_MEMORY: ("memory", "exceeded its memory limit"),
    EXIT_CPU: ("timeout", "exceeded its CPU-time limit"),
    EXIT_POLICY: ("policy", "attempted a forbidden operation"),
    EXIT_UNAVAILABLE: ("unavailable", "could not apply the required isolation layers"),
    EXIT_LOAD: ("env_code", "failed to load the environment"),
    EXIT_PROTOCOL: ("crash", "broke the protocol"),
}


class WorkerFatal(Exception):
    """Environment code failed in a way after which its worker must not go on (memory,
    CPU time, a forbidden operation): ``reply`` is the error reply to send, ``code`` the
    exit code (:data:`EXIT_CODES`). Raised by the worker's ``classify``; the worker sends
    the reply and exits, the restricted backend turns it into the matching sandbox error
    (here because both import this module and neither should reach into the other)."""

    def __init__(self, reply: list[Any], code: int) -> None:
        super().__init__(reply[2])
        self.reply = reply
        self.code = code


class ChannelClosed(Exception):
    """The peer closed its end (or died) before a whole frame arrived."""


class FrameTooLarge(Exception):
    """The peer announced a frame larger than the receiver accepts."""


class PipeChannel:
    """One end of a duplex channel made of two pipes: ``rfd`` carries frames from the peer,
    ``wfd`` frames to it. Offers the few socket methods the frame readers use
    (``recv_into``, ``recv``, ``sendall``, ``fileno``, ``close``), so a worker serves
    either. Owns both descriptors.

    ``sendall`` on a non-blocking ``wfd`` waits for room with ``poll`` up to ``timeout``
    (seconds, ``None``: forever) and raises :class:`TimeoutError` when the peer stopped
    reading; on a blocking ``wfd`` it simply blocks (the worker's side: a stuck pool is
    the pool's business, and the deadline kills the worker anyway)."""

    __slots__ = ("rfd", "wfd")

    def __init__(self, rfd: int, wfd: int) -> None:
        self.rfd = rfd
        self.wfd = wfd

    def fileno(self) -> int:
        return self.rfd

    def recv_into(self, buf: bytearray | memoryview, nbytes: int = 0) -> int:
        if nbytes:
            buf = memoryview(buf)[:nbytes]
        return os.readv(self.rfd, (buf,))

    def recv(self, n: int) -> bytes:
        return os.read(self.rfd, n)

    def sendall(self, data: bytes | memoryview, timeout: float | None = None) -> None:
        view = memoryview(data)
        sent = 0
        total = len(view)
        while sent < total:
            try:
                sent += os.write(self.wfd, view[sent:])
            except BlockingIOError:
                waiter = select.poll()
                waiter.register(self.wfd, select.POLLOUT)
                if not waiter.poll(None if timeout is None else max(1, int(timeout * 1000))):
                    raise TimeoutError("the peer stopped reading") from None

    def close(self) -> None:
        for name in ("rfd", "wfd"):
            fd = getattr(self, name)
            if fd >= 0:
                setattr(self, name, -1)
                try:
                    os.close(fd)
                except OSError:
                    pass

    @property
    def closed(self) -> bool:
        return self.rfd < 0


def pipe_channels() -> tuple[PipeChannel, PipeChannel]:
    """Two connected channel ends (first: the pool's, second: the worker's)."""
    to_worker_r, to_worker_w = os.pipe()
    to_pool_r, to_pool_w = os.pipe()
    return PipeChannel(to_pool_r, to_worker_w), PipeChannel(to_worker_r, to_pool_w)


def new_packer() -> msgpack.Packer:
    """A packer for one sender (reused: building one per message costs more than packing)."""
    return msgpack.Packer(use_bin_type=True)


_packer = new_packer()


def encode(message: Any) -> bytes:
    payload = _packer.pack(message)
    return HEADER.pack(len(payload)) + payload


def send(sock: socket.socket | PipeChannel, message: Any) -> None:
    sock.sendall(encode(message))


def recv_exactly(sock: socket.socket | PipeChannel, n: int) -> bytes:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise ChannelClosed(f"peer closed the channel after {got} of {n} bytes")
        got += k
    return bytes(buf)


def recv_frame(sock: socket.socket | PipeChannel, max_bytes: int = MAX_FRAME_BYTES) -> bytes:
    """Read one frame's payload (blocking). Raises :class:`ChannelClosed` on EOF."""
    head = sock.recv(65536)
    if not head:
        raise ChannelClosed("peer closed the channel")
    while len(head) < HEADER.size:
        more = sock.recv(HEADER.size - len(head))
        if not more:
            raise ChannelClosed("peer closed the channel inside a frame header")
        head += more
    (size,) = HEADER.unpack_from(head)
    if size > max_bytes:
        raise FrameTooLarge(f"frame of {size} bytes exceeds the limit of {max_bytes}")
    body = head[HEADER.size :]
    if len(body) < size:
        body += recv_exactly(sock, size - len(body))
    elif len(body) > size:
        # Strict request/reply: a peer never sends two frames ahead.
        raise FrameTooLarge("peer sent more bytes than one frame")
    return body


class FrameReader:
    """Reads frames into one reusable buffer (the worker's hot loop: no allocation per
    request). :meth:`read` returns a memoryview valid until the next call."""

    def __init__(self, sock: socket.socket | PipeChannel, size: int = 65536) -> None:
        self.sock = sock
        self.buf = bytearray(size)
        self.view = memoryview(self.buf)
        # The first read of every frame, bound once (a pipe: readv straight into the buffer).
        if isinstance(sock, PipeChannel):
            self._first_read = functools.partial(os.readv, sock.rfd, (self.buf,))
        else:
            self._first_read = functools.partial(sock.recv_into, self.buf)

    def read(self, max_bytes: int = MAX_FRAME_BYTES) -> memoryview:
        have = self._first_read()
        if have > HEADER.size and have == HEADER.size + HEADER.unpack_from(self.buf)[0] and have - HEADER.size <= max_bytes:
            return self.view[HEADER.size : have]  # the usual case: the whole frame in one read
        return self.read_rest(have, max_bytes)

    def read_rest(self, have: int, max_bytes: int = MAX_FRAME_BYTES) -> memoryview:
        """Finish reading a frame of which the first ``have`` bytes (from one read into
        :attr:`buf`) are in the buffer; ``have == 0`` means the peer closed the channel."""
        buf = self.buf
        view = self.view
        if have == 0:
            raise ChannelClosed("peer closed the channel")
        while have < HEADER.size:
            k = self.sock.recv_into(view[have:])
            if k == 0:
                raise ChannelClosed("peer closed the channel inside a frame header")
            have += k
        (size,) = HEADER.unpack_from(buf)
        if size > max_bytes:
            raise FrameTooLarge(f"frame of {size} bytes exceeds the limit of {max_bytes}")
        need = HEADER.size + size
        if need > len(buf):
            grown = bytearray(need)
            grown[:have] = buf[:have]
            buf, view = grown, memoryview(grown)
        while have < need:
            k = self.sock.recv_into(view[have:need])
            if k == 0:
                raise ChannelClosed(f"peer closed the channel after {have} of {need} bytes")
            have += k
        if have > need:
            raise FrameTooLarge("peer sent more bytes than one frame")
        return view[HEADER.size : need]


def encode_step_reply(obs: str, reward: float, terminated: bool, truncated: bool) -> bytes:
    """A whole binary step reply frame (header included). Raises ``UnicodeEncodeError``
    for an observation that is not valid Unicode (lone surrogates), as msgpack would."""
    text = obs.encode("utf-8")
    return STEP_REPLY_HEAD.pack(len(text) + STEP_REPLY.size, STEP_MARK, terminated | truncated << 1, reward) + text


def encode_step_request(iid: int, action: str) -> bytes:
    """A whole binary step request frame (header included). Raises ``UnicodeEncodeError``
    for an action that is not valid Unicode, as msgpack would."""
    text = action.encode("utf-8")
    return STEP_REQUEST.pack(len(text) + STEP_REQUEST.size - HEADER.size, STEP_MARK, iid) + text


def decode_step_request(payload: bytes | memoryview) -> tuple[int, str]:
    """``(instance id, action)`` of a binary step request's payload (header excluded)."""
    (iid,) = _INSTANCE_ID.unpack_from(payload, 1)
    return iid, str(payload[STEP_REQUEST.size - HEADER.size :], "utf-8")


_INSTANCE_ID = struct.Struct(">q")


def decode_trusted(payload: bytes | memoryview) -> Any:
    """Decode a frame from the trusted side (the pool): used inside workers and the zygote."""
    return msgpack.unpackb(payload, raw=False, strict_map_key=False, use_list=True)


def _untrusted_limits(max_str_len: int) -> dict[str, Any]:
    """Decoder options for anything a worker sent: str keys only, bounded sizes, no
    extension types (one definition for the streaming and the one-shot decoder)."""
    return {
        "raw": False,
        "use_list": True,
        "strict_map_key": True,
        "max_str_len": max_str_len,
        "max_bin_len": max_str_len,
        "max_array_len": 1_000_000,
        "max_map_len": 100_000,
        "max_ext_len": 0,
    }


#: Deepest info a reply may carry, and most values in it (both sides check: the worker
#: when it converts the info, the pool after decoding it).
MAX_INFO_DEPTH = 16
MAX_INFO_ITEMS = 10_000


def reply_bytes_limit(max_output_chars: int, results: int = 1, max_frame_bytes: int = MAX_FRAME_BYTES) -> int:
    """The largest frame a valid reply carrying ``results`` results can be, capped at
    ``max_frame_bytes``: per result an observation and the info's text (or a solution's
    actions) at 4 UTF-8 bytes a character, the info's :data:`MAX_INFO_ITEMS` values at up
    to 16 bytes each, and room for an error's message and traceback. A worker announcing
    more is lying, and the pool refuses the frame before reading it."""
    per_result = 8 * max_output_chars + 16 * MAX_INFO_ITEMS + 64 * 1024
    return min(max_frame_bytes, per_result * max(1, results) + 4096)


def reply_values_limit(max_output_chars: int, results: int = 1) -> int:
    """The most decoded values (containers and their members) a valid reply carrying
    ``results`` results can hold: the info's :data:`MAX_INFO_ITEMS`, a solution's actions
    (at most ``max_output_chars``) and the reply's own few lists, per result."""
    return (MAX_INFO_ITEMS + max_output_chars + 64) * max(1, results)


class DecodeBudgetExceeded(ValueError):
    """A frame from a worker decodes to more values than any valid reply holds."""


class DecodeBudget:
    """msgpack ``list_hook``/``object_hook`` pair that counts every decoded container and its
    members, and stops the decode once ``limit`` is passed. Decoding builds a Python object
    per wire container (an empty map is one byte on the wire and about 70 bytes decoded),
    so without a count a frame of empty maps grows about 80-fold on the host; with it the
    decode stops after ``limit`` values, whatever the frame's size."""

    __slots__ = ("left", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.left = limit

    def _spend(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise DecodeBudgetExceeded(f"the reply holds more than {self.limit} values")

    def on_list(self, value: list[Any]) -> list[Any]:
        self._spend(len(value) + 1)
        return value

    def on_map(self, value: dict[str, Any]) -> dict[str, Any]:
        self._spend(len(value) + 1)
        return value


def decode_untrusted_budgeted(payload: bytes | memoryview, *, max_str_len: int, max_values: int) -> Any:
    """:func:`decode_untrusted` that also stops after ``max_values`` decoded values
    (:class:`DecodeBudgetExceeded`); one-shot, so the payload is read in place, not copied
    into a decoder's buffer."""
    budget = DecodeBudget(max_values)
    return msgpack.unpackb(payload, list_hook=budget.on_list, object_hook=budget.on_map, **_untrusted_limits(max_str_len))


def untrusted_unpacker(max_bytes: int) -> msgpack.Unpacker:
    """A reusable decoder for frames from a worker, with the limits of
    :func:`decode_untrusted` (building one per frame costs more than the decoding).

    Its buffer starts at 16 KiB (``read_size``) and grows only for a larger frame: the
    decoder appends each frame after the last and moves back to the start only at the end
    of its buffer, so with msgpack's default (1 MiB here) every page of it was written
    within some 10,000 small replies, about 0.8 MiB per worker link in the pool's process."""
    return msgpack.Unpacker(max_buffer_size=max_bytes, read_size=min(16384, max_bytes), **_untrusted_limits(max_bytes))


def decode_untrusted(payload: bytes | memoryview, *, max_str_len: int) -> Any:
    """Decode a frame that came from a worker: bounded sizes, no extension types."""
    return msgpack.unpackb(payload, **_untrusted_limits(max_str_len))


def error_reply(kind: str, message: str, traceback: str | None = None) -> list[Any]:
    return [ERR, kind, message, traceback]
