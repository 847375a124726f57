"""The pool's side of the wire to each worker: :class:`WorkerLink` sends requests to one
worker with a wall-clock deadline, kills it through its pidfd when the deadline passes, and
turns its death into the matching :class:`SandboxError` (:func:`describe_status`). The
zygote's process is :mod:`spade_sandbox.zygote_process`'s (``zygote_path`` and
``ZygoteProcess`` are re-exported here).
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any, NoReturn

from . import native, protocol
from .errors import (
    InstanceLost,
    SandboxCrash,
    SandboxError,
    SandboxTimeout,
    WorkerKilled,
)
from .zygote_process import ZygoteProcess, describe_status, zygote_path

__all__ = ["WorkerLink", "ZygoteProcess", "describe_status", "zygote_path"]

#: The binary step frame's layout (``protocol.STEP_REQUEST``, ``protocol.STEP_REPLY``):
#: its mark, the request's fields after the header, and a reply's fields before its text.
_STEP_MARK = protocol.STEP_MARK
_REQUEST_FIELDS = protocol.STEP_REQUEST.size - protocol.HEADER.size
_REPLY_FIELDS = protocol.STEP_REPLY.size

#: The C step call (None: the pure-Python path) and the codes it answers with.
_step_call = native.fast.step_call if native.fast is not None else None
_NOT_SENT, _TIMED_OUT, _MALFORMED, _STOPPED_READING = -1, -3, -4, -5


def _pid_of_pidfd(pidfd: int) -> int | None:
    try:
        with open(f"/proc/self/fdinfo/{pidfd}") as info:
            for line in info:
                if line.startswith("Pid:"):
                    pid = int(line.split()[1])
                    return pid if pid > 0 else None
    except (OSError, ValueError):
        return None
    return None


@dataclass(eq=False)
class WorkerLink:
    """One worker: its pipe channel, pidfd and the instances it holds."""

    id: int
    key: protocol.WorkerKey
    pid: int
    sock: protocol.PipeChannel
    pidfd: int
    zygote: ZygoteProcess
    max_frame_bytes: int
    layers: list[str] = field(default_factory=list)
    missing_layers: dict[str, str] = field(default_factory=dict)
    timings_us: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    instances: set[int] = field(default_factory=set)
    next_instance: int = 0
    death: SandboxError | None = None
    killed_by_us: str | None = None
    #: The worker's reply to constructing instance 0 while loading (not yet claimed by a spawn).
    first_reply: Any = None
    #: Whether the worker serves binary steps with the C fast path (its ready report).
    c_fast_path: bool = False

    #: Deadline of single calls.
    call_timeout_s: float = 10.0
    #: Largest reply to a single call, in bytes, and most values it may decode to
    #: (:func:`protocol.reply_bytes_limit`, :func:`protocol.reply_values_limit`); 0: the
    #: frame limit, and the values of that many bytes.
    single_reply_bytes: int = 0
    single_reply_values: int = 0

    def __post_init__(self) -> None:
        #: The worker's pid as the zygote sees it (differs under an outer PID namespace).
        self.zygote_side_pid = self.pid
        if self.pidfd >= 0:
            # Under an outer jail with its own PID namespace the zygote reports the pid it
            # sees; the pidfd's fdinfo gives the pid in ours (what tools and tests need).
            self.pid = _pid_of_pidfd(self.pidfd) or self.pid
        # The pool never blocks on a worker: writes that do not fit wait in poll (with the
        # call's deadline), reads wait in poll first.
        os.set_blocking(self.sock.wfd, False)
        self._poll = select.poll()
        self._poll.register(self.sock.rfd, select.POLLIN | select.POLLHUP | select.POLLERR)
        self._wait = self._poll.poll
        self._rfd = self.sock.rfd
        self._wfd = self.sock.wfd
        self._buf = bytearray(65536)
        #: A view kept for the life of the link: slicing it costs less than a new view per call.
        self._view = memoryview(self._buf)
        self._bufs = (self._buf,)
        self._pack = protocol.new_packer().pack
        #: One decoder for the life of the link (building one per reply costs more than the
        #: decoding); a frame it cannot decode exactly kills the worker, so its state never
        #: carries over.
        self._unpacker = protocol.untrusted_unpacker(self.max_frame_bytes)
        #: Bytes fed to ``_unpacker`` so far (its ``tell()`` after an exact decode).
        self._fed = 0
        self._size_of = protocol.HEADER.unpack_from
        self._step_head = protocol.STEP_REQUEST.pack
        self._step_reply = protocol.STEP_REPLY.unpack_from
        self._call_timeout_ms = max(1, int(self.call_timeout_s * 1000))
        if self.single_reply_bytes <= 0:
            self.single_reply_bytes = self.max_frame_bytes
        self.single_reply_bytes = min(self.single_reply_bytes, self.max_frame_bytes)
        if self.single_reply_values <= 0:
            self.single_reply_values = self.max_frame_bytes

    @property
    def alive(self) -> bool:
        return self.death is None

    # --- transport --------------------------------------------------------------------
    def send(self, message: Any, what: str, timeout: float) -> None:
        data = protocol.encode(message)
        try:
            self.sock.sendall(data, timeout)
        except TimeoutError:
            self.fail(what, "stopped reading requests", SandboxTimeout)
        except OSError:
            self.fail(what, None, None)

    def receive(
        self, what: str, deadline: float, timeout: float, max_bytes: int = 0, max_values: int = 0
    ) -> Any:
        """Wait for one reply frame until ``deadline`` (``time.monotonic``) and decode it.
        ``max_bytes`` / ``max_values``: the largest frame and most decoded values a valid
        reply to this request has (0: those of a single call)."""
        return self._finish(what, deadline, timeout, 0, max_bytes=max_bytes, max_values=max_values)

    def _decode(self, view: memoryview, what: str, max_values: int = 0) -> Any:
        """Decode exactly one msgpack object filling ``view`` (one frame's payload).

        A frame that fits the link's buffer goes through the reusable decoder (at most
        64 KiB of wire, so at most a few MiB decoded); a longer one is decoded in place
        with a :class:`protocol.DecodeBudget` of ``max_values`` values (0: those of a
        single call), which stops a frame of tiny containers long before it costs the
        host what its decoded objects would."""
        if len(view) > len(self._buf) - protocol.HEADER.size:
            try:
                return protocol.decode_untrusted_budgeted(
                    view, max_str_len=self.max_frame_bytes, max_values=max_values or self.single_reply_values
                )
            except protocol.DecodeBudgetExceeded as exc:
                why = f"sent a reply that decodes to too many values ({exc})"
            except Exception as exc:
                why = f"sent an undecodable reply ({type(exc).__name__})"
            # Raised outside the except clause: as its context, the decoder's exception
            # (and through its traceback the whole frame) would live as long as the error.
            self.fail(what, why, SandboxCrash)
        unpacker = self._unpacker
        try:
            unpacker.feed(view)
            value = unpacker.unpack()
        except Exception as exc:
            self.fail(what, f"sent an undecodable reply ({type(exc).__name__})", SandboxCrash)
        self._fed += len(view)
        if unpacker.tell() != self._fed:
            self.fail(what, "sent an undecodable reply (bytes after the value)", SandboxCrash)
        return value

    def call(self, message: Any, what: str) -> Any:
        """One request with this link's ``call_timeout_s`` and its decoded reply.

        The hot path of single calls: one ``write``, one ``poll`` (the deadline) and, when
        the whole reply arrives in one read (the usual case for small replies), one
        ``readv`` into the link's reusable buffer and a decode straight from it with the
        link's reusable decoder. Longer replies continue in :meth:`_finish`'s loop."""
        if self.death is not None:
            raise self.lost_error()
        payload = self._pack(message)
        data = protocol.HEADER.pack(len(payload)) + payload
        try:
            # An empty pipe takes a small frame whole; anything else goes through sendall.
            if len(data) > 4096 or os.write(self._wfd, data) != len(data):
                self.send(message, what, self.call_timeout_s)
        except BlockingIOError:
            self.send(message, what, self.call_timeout_s)
        except OSError:
            self.fail(what, None, None)
        if not self._wait(self._call_timeout_ms):
            self.fail(what, f"did not answer within {self.call_timeout_s:g} s", SandboxTimeout)
        try:
            have = os.readv(self._rfd, self._bufs)
        except OSError:
            have = 0
        if have == 0:
            self.fail(what, None, None)
        if have > 4 and have == self._size_of(self._buf)[0] + 4:
            # _decode, written out (one frame less on the hot path): exactly one value
            # must fill the frame. ``_fed`` counts every byte fed, so one ``tell`` says
            # whether the decoder stopped exactly at the frame's end.
            unpacker = self._unpacker
            try:
                unpacker.feed(self._view[4:have])
                value = unpacker.unpack()
            except Exception as exc:
                self.fail(what, f"sent an undecodable reply ({type(exc).__name__})", SandboxCrash)
            self._fed += have - 4
            if unpacker.tell() != self._fed:
                self.fail(what, "sent an undecodable reply (bytes after the value)", SandboxCrash)
            return value
        timeout = self.call_timeout_s
        return self._finish(what, time.monotonic() + timeout, timeout, have)

    def step(self, iid: int, action: str) -> Any:
        """``step(action)`` of instance ``iid`` as one binary step frame
        (:data:`protocol.STEP_MARK`), with :meth:`call`'s deadline and transport.

        Returns a tuple ``(obs, reward, terminated, truncated, {})`` when the worker sent a
        binary reply (its types are fixed by the encoding; the caller still checks that
        the reward is finite and the observation's length), else the decoded msgpack reply
        (an error, or a result the worker converted). A binary reply that is not
        well-formed kills the worker (:class:`SandboxCrash`).

        With the C fast path (:mod:`.native`) one C call writes, waits, reads and parses a
        whole binary reply; anything else it hands back as a code, and the Python code
        below continues from exactly that state."""
        if self.death is not None:
            raise self.lost_error()
        if _step_call is not None:
            got = _step_call(self._wfd, self._rfd, self._buf, iid, action, self._call_timeout_ms)
            if type(got) is tuple:
                return got
            if got > 0:
                return self._step_received(got)
            if got != _NOT_SENT:
                self._step_failed(got)
        try:
            text = action.encode("utf-8")
        except UnicodeEncodeError:  # msgpack refuses it the same way: keep its behaviour
            return self.call(["step", iid, action], "step()")
        data = self._step_head(len(text) + _REQUEST_FIELDS, _STEP_MARK, iid) + text  # protocol.encode_step_request
        try:
            if len(data) > 4096 or os.write(self._wfd, data) != len(data):
                self._send_bytes(data, "step()")
        except BlockingIOError:
            self._send_bytes(data, "step()")
        except OSError:
            self.fail("step()", None, None)
        if not self._wait(self._call_timeout_ms):
            self.fail("step()", f"did not answer within {self.call_timeout_s:g} s", SandboxTimeout)
        try:
            have = os.readv(self._rfd, self._bufs)
        except OSError:
            have = 0
        return self._step_received(have)

    def _step_failed(self, code: int) -> NoReturn:
        """The error of a C step call's failure ``code`` (:mod:`._fast`'s constants)."""
        if code == _TIMED_OUT:
            self.fail("step()", f"did not answer within {self.call_timeout_s:g} s", SandboxTimeout)
        if code == _MALFORMED:
            self.fail("step()", "sent an undecodable reply (a malformed binary step reply)", SandboxCrash)
        if code == _STOPPED_READING:
            self.fail("step()", "stopped reading requests", SandboxTimeout)
        self.fail("step()", None, None)  # the write failed, or the channel closed

    def _step_received(self, have: int) -> Any:
        """The reply to a step request of which the first ``have`` bytes (from one read)
        are in the link's buffer: a binary reply's tuple, or the decoded msgpack reply."""
        if have > 4 and have == self._size_of(self._buf)[0] + 4:  # a whole frame in one read
            payload: Any = self._view[4:have]
        elif have == 0:
            self.fail("step()", None, None)
        else:
            timeout = self.call_timeout_s
            payload = memoryview(self._finish("step()", time.monotonic() + timeout, timeout, have, raw=True))
        if not payload or payload[0] != _STEP_MARK:
            return self._decode(payload, "step()")
        return self._binary_step(payload)

    def _binary_step(self, payload: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """The 5-tuple of a binary step reply's ``payload`` (the frame after its header); a
        malformed one kills the worker (:class:`SandboxCrash`)."""
        obs = None
        if len(payload) >= _REPLY_FIELDS:
            _, flags, reward = self._step_reply(payload, 0)
            try:
                obs = str(payload[_REPLY_FIELDS:], "utf-8")
            except UnicodeDecodeError:
                pass
        if obs is None or flags > 3:
            self.fail("step()", "sent an undecodable reply (a malformed binary step reply)", SandboxCrash)
        return obs, reward, flags & 1 == 1, flags & 2 == 2, {}

    def receive_payload(self, what: str, deadline: float, timeout: float, max_bytes: int = 0) -> bytes | memoryview:
        """Wait for one reply frame until ``deadline`` and return its payload undecoded
        (for :meth:`decode_payload`, or a C decoder that checks it first): bytes, or for a
        frame longer than the link's buffer a view of the buffer it was read into."""
        return self._finish(what, deadline, timeout, 0, raw=True, max_bytes=max_bytes)

    def decode_payload(self, payload: bytes | memoryview, what: str, max_values: int = 0) -> Any:
        """Decode a payload from :meth:`receive_payload` as :meth:`receive` would have."""
        return self._decode(memoryview(payload), what, max_values)

    def _send_bytes(self, data: bytes, what: str) -> None:
        """Write a whole frame, waiting for room up to the call's deadline."""
        try:
            self.sock.sendall(data, self.call_timeout_s)
        except TimeoutError:
            self.fail(what, "stopped reading requests", SandboxTimeout)
        except OSError:
            self.fail(what, None, None)

    def _finish(
        self, what: str, deadline: float, timeout: float, have: int, raw: bool = False,
        max_bytes: int = 0, max_values: int = 0,
    ) -> Any:
        """Read the rest of a frame of which ``have`` bytes are in the buffer, and decode
        it (``raw``: return its payload as bytes instead).

        ``max_bytes`` (0: :attr:`single_reply_bytes`) is the largest frame accepted: a
        header announcing more kills the worker before anything is read. A longer frame
        than the link's buffer gets a buffer that grows as its bytes arrive (doubling), so
        a header announcing a large frame allocates nothing until the bytes exist; the
        buffer is dropped before this returns or raises (an exception's traceback keeps
        this frame's variables alive, and a dead link's error lives as long as the pool)."""
        limit = max_bytes or self.single_reply_bytes
        buf = self._buf
        view = memoryview(buf)
        need = protocol.HEADER.size
        size = -1
        try:
            while True:
                if size < 0 and have >= protocol.HEADER.size:
                    (size,) = protocol.HEADER.unpack_from(buf)
                    if size > limit:
                        self.fail(what, f"announced a {size}-byte reply (limit for this request {limit})", SandboxCrash)
                    need = protocol.HEADER.size + size
                if have >= need:
                    break
                if have == len(buf):
                    # Grow as the bytes arrive (doubling), never past the announced size.
                    view.release()
                    size_now = min(need, 2 * len(buf))
                    if buf is self._buf:  # leave the link's own buffer as it is
                        grown = bytearray(size_now)
                        grown[:have] = buf[:have]
                        buf = grown
                        del grown
                    else:  # in place: a large block is remapped, not copied
                        buf += bytes(size_now - len(buf))
                    view = memoryview(buf)
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._wait(max(1, int(remaining * 1000) + 1)):
                    if time.monotonic() >= deadline:
                        self.fail(what, f"did not answer within {timeout:g} s", SandboxTimeout)
                    continue
                try:
                    k = os.readv(self._rfd, (view[have:],))
                except OSError:
                    k = 0
                if k == 0:
                    if have:
                        self._cut_short(what, have, need if size >= 0 else None)
                    self.fail(what, None, None)
                have += k
            if have > need:
                self.fail(what, "sent more than one reply", SandboxCrash)
            if raw:
                if buf is self._buf:  # reused by the next call: hand out a copy
                    return bytes(view[protocol.HEADER.size : need])
                return memoryview(buf)[protocol.HEADER.size : need]  # this frame's own buffer
            return self._decode(view[protocol.HEADER.size : need], what, max_values)
        finally:
            view.release()
            del buf, view

    def _cut_short(self, what: str, have: int, need: int | None) -> NoReturn:
        """The worker closed its channel inside a reply frame: a protocol error, with how
        its process ended."""
        self.kill()
        status, oom, cpu_hit = self.zygote.wait_status(self.zygote_side_pid)
        cls, how = describe_status(status, oom, cpu_hit)
        frame = f"{have} of {need} bytes" if need is not None else f"{have} bytes of a {protocol.HEADER.size}-byte header"
        if cls is SandboxCrash:
            why = f"broke the protocol: its reply frame was cut short ({frame}) and it {how}"
        else:
            why, cls = f"{how} (its reply frame was cut short: {frame})", cls
        self.mark_dead(cls(f"worker {self.pid} {why} during {what}; it was killed and its "
                           f"{len(self.instances)} instance(s) are lost"))
        assert self.death is not None
        raise self.death

    def request(self, message: Any, what: str, timeout: float) -> Any:
        if timeout == self.call_timeout_s:
            return self.call(message, what)
        if self.death is not None:
            raise self.lost_error()
        self.send(message, what, timeout)
        return self.receive(what, time.monotonic() + timeout, timeout)

    # --- death ------------------------------------------------------------------------
    def kill(self) -> None:
        if self.pidfd >= 0:
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except OSError:
                pass
        else:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass

    def fail(self, what: str, why: str | None, cls: type[SandboxError] | None) -> NoReturn:
        """Kill the worker, record why it died and raise that error. ``why``/``cls`` None:
        the worker closed its channel on its own; ask the zygote how it ended."""
        self.kill()
        status, oom, cpu_hit, cpu = self.zygote.end_report(self.zygote_side_pid)
        if oom:
            cls, why = describe_status(status, oom)
        elif why is None or cls is None:  # it ended by itself: the status says how
            cls, why = describe_status(status, False, cpu_hit)
            if cls is SandboxCrash and status is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
                cls = WorkerKilled  # not by the sandbox, which kills only after saying why
                if cpu:  # whether it was near its CPU limit: a SIGKILL from elsewhere, or that limit read short
                    why += f" ({cpu})"
        self.mark_dead(cls(f"worker {self.pid} {why} during {what}; it was killed and its "
                           f"{len(self.instances)} instance(s) are lost"))
        assert self.death is not None
        raise self.death

    def mark_dead(self, error: SandboxError) -> None:
        if self.death is None:
            self.death = error
        self.close_fds()

    def lost_error(self) -> InstanceLost:
        assert self.death is not None
        return InstanceLost(f"instance lost because worker {self.pid} died earlier: {self.death.message}")

    def close_fds(self) -> None:
        self._view.release()
        # A dead link stays in its pool (its handles then say "instance lost"): it keeps
        # nothing of the worker's replies (its buffer, its decoder's buffered bytes).
        self._buf = bytearray()
        self._bufs = (self._buf,)
        self._unpacker = None
        if not self.sock.closed:
            try:
                self._poll.unregister(self.sock.rfd)
            except (KeyError, ValueError):
                pass
            self.sock.close()
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1

    def shutdown(self, wait: bool = True) -> None:
        """Kill the worker on purpose (pool closing, or a worker whose error was fatal);
        ``wait=False`` leaves reaping it to the zygote."""
        if self.death is None:
            self.kill()
            if wait:
                self.zygote.wait_status(self.zygote_side_pid)
            self.death = SandboxCrash(f"worker {self.pid} was shut down")
        self.close_fds()
