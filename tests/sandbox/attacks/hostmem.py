"""Peak memory of this (the host's) process while an attack runs, and the source pieces
the host-side attacks share: finding the worker's reply pipe and writing a forged frame
on it (possible only with the static layer off: it takes ``os``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

#: Host peak memory allowed above its level before an attack (the issue's target: within
#: 64 MB of validating a good environment, whose own cost is a few MB).
PEAK_BOUND_MB = 64

#: Module-level code of an attack that forges frames: ``forge(payload)`` writes one frame
#: (length header + payload) on the worker's reply pipe, ``forge_raw(data)`` raw bytes.
FORGE_PRELUDE = '''
import os, stat, msgpack

def _reply_fd():
    for fd in range(3, 64):
        try:
            # The write end of a pipe: an empty write succeeds only there.
            if stat.S_ISFIFO(os.fstat(fd).st_mode) and os.write(fd, b"") == 0:
                return fd
        except OSError:
            pass
    raise LookupError("no reply pipe")

def forge_raw(data):
    fd = _reply_fd()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]

def forge(payload):
    forge_raw(len(payload).to_bytes(4, "big") + payload)
'''


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise LookupError(field)


def rss_mb() -> float:
    return _status_kb("VmRSS") / 1024


def held_mb() -> float:
    """This process's RSS once garbage is collected and glibc has handed its free memory
    back: what live objects hold. (glibc keeps up to twice its mmap threshold free at the
    top of each heap, and earlier tests' large frees raise that threshold to 32 MB, so a
    bare RSS also counts freed buffers the allocator keeps for reuse.)"""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc: RSS as it is
    return rss_mb()


@dataclass
class Peak:
    """This process's RSS before, and its high-water mark (``VmHWM``) during, a block."""

    before_mb: float = 0.0
    peak_mb: float = 0.0

    @property
    def grown_mb(self) -> float:
        return self.peak_mb - self.before_mb


@contextmanager
def peak_memory() -> Iterator[Peak]:
    """Measure the block's peak RSS: ``VmHWM`` is reset (``clear_refs`` 5) at the start,
    so the peak is this block's, not the process's since it began."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
    peak = Peak(before_mb=rss_mb())
    try:
        yield peak
    finally:
        peak.peak_mb = _status_kb("VmHWM") / 1024


def within_bound(run: Callable[[], Any]) -> tuple[Any, Peak]:
    """Run ``run()`` and check that this process's peak stayed within
    :data:`PEAK_BOUND_MB` of where it started; returns its result and the measure."""
    with peak_memory() as peak:
        result = run()
    assert peak.grown_mb < PEAK_BOUND_MB, f"host peak memory grew by {peak.grown_mb:.0f} MB"
    return result, peak
