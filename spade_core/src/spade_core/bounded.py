"""A call bounded in time and memory: run in a forked child that is killed when it runs past
its deadline or is refused memory past its budget.

For trusted code fed untrusted text, where the code's own cost depends on the text: a
library's answer scorer (Reasoning-Gym's parse a reply with sympy, whose ``9**9**9**9`` or
deeply nested input runs for hours or takes gigabytes). Environment code is never run
this way; it runs in the sandbox. The child is a fork of the calling process, so the
function and its arguments need not be picklable (its result must be a JSON value); its address space
may grow by ``memory_mb`` past what the caller's is at the fork (``RLIMIT_AS``), its CPU
time is limited to the deadline (``RLIMIT_CPU``), and the caller waits for it at most
``timeout_s`` of wall time, then kills it. Standard library only; POSIX only.
"""

from __future__ import annotations

import json
import math
import os
import resource
import select
import signal
import time
from collections.abc import Callable
from typing import Any, TypeVar

from .errors import SpadeError

__all__ = ["MAX_RESULT_BYTES", "BoundedCallError", "call_bounded"]

T = TypeVar("T")

#: Largest result (as JSON) a child may send back.
MAX_RESULT_BYTES = 1 << 20


class BoundedCallError(SpadeError):
    """A bounded call that gave no result: ``reason`` says why (``timeout``, ``memory``,
    ``error``, ``killed``) and the message what happened."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _address_space_kb() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1])
    return 0


def _child(fn: Callable[..., Any], args: tuple[Any, ...], write_fd: int, memory_mb: int, cpu_s: int) -> None:
    """Runs in the fork: limits first, then ``fn``; never returns (``os._exit``)."""
    status = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        limit = (_address_space_kb() << 10) + (memory_mb << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
        try:
            outcome: tuple[str, Any] = ("ok", fn(*args))
        except MemoryError:
            outcome = ("memory", f"it needed more than {memory_mb} MiB")
        except RecursionError:
            outcome = ("error", "RecursionError: nested too deeply")
        except BaseException as exc:  # the function's own failure, reported to the caller
            outcome = ("error", f"{type(exc).__name__}: {str(exc)[:300]}")
        try:
            data = json.dumps(outcome, allow_nan=False).encode()
        except (TypeError, ValueError) as exc:
            data = json.dumps(["error", f"its result is not a JSON value: {exc}"]).encode()
        if len(data) > MAX_RESULT_BYTES:
            data = json.dumps(["error", f"its result is more than {MAX_RESULT_BYTES} bytes"]).encode()
        view = memoryview(data)
        while view:
            view = view[os.write(write_fd, view) :]
    except BaseException:
        status = 1
    finally:
        os._exit(status)


def call_bounded(fn: Callable[..., T], *args: Any, timeout_s: float, memory_mb: int) -> T:
    """``fn(*args)`` run in a forked child within ``timeout_s`` seconds and ``memory_mb``
    MiB more than this process's address space; its return value, or
    :class:`BoundedCallError` (the child killed past its deadline, out of memory, or
    ``fn`` raised: the exception's type and message, never the exception itself). The
    result must be a JSON value (finite numbers, text, lists, dicts): it comes back as JSON,
    never as a pickle, so what the child ran cannot make this process run anything."""
    if not timeout_s > 0 or memory_mb < 1:
        raise ValueError(f"timeout_s must be positive and memory_mb at least 1, got {timeout_s}, {memory_mb}")
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _child(fn, args, write_fd, memory_mb, max(1, math.ceil(timeout_s)))
    os.close(write_fd)
    chunks: list[bytes] = []
    size = 0
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_fd], [], [], left)[0]:
                raise BoundedCallError("timeout", f"it ran past its {timeout_s:g} s")
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_RESULT_BYTES + 4096:
                raise BoundedCallError("error", f"its result is more than {MAX_RESULT_BYTES} bytes")
            chunks.append(chunk)
    finally:
        os.close(read_fd)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, wait_status = os.waitpid(pid, 0)
    if not chunks:
        how = os.waitstatus_to_exitcode(wait_status)
        if how == -signal.SIGXCPU or how == -signal.SIGKILL:
            raise BoundedCallError("timeout", f"it ran past its {timeout_s:g} s of CPU")
        raise BoundedCallError("killed", f"it ended without a result (exit status {how})")
    kind, value = json.loads(b"".join(chunks))
    if kind != "ok":
        raise BoundedCallError(kind, value)
    return value
