"""Keeping a CPU training process's resident memory near what it holds.

glibc's allocator serves requests below its mmap threshold from its heaps and raises that
threshold (up to 32 MB) each time a large block is freed, so the tensors a rollout and an
update allocate and free by the thousand end up in heaps it rarely gives back: a learning
run of the 135M model held about twice the memory it used (docs/learning.md, Cost).
:func:`small_heap` fixes the threshold at 1 MB for a block (every larger tensor is its own
mapping, returned when freed); :func:`return_freed_memory` hands the heaps' free tops back
after a phase; :func:`owned_process` is what a training command holds for its whole run.
All do nothing where the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

#: ``mallopt`` parameters (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: Blocks from this size up get a mapping of their own.
MMAP_THRESHOLD = 1 << 20


@functools.cache
def _glibc() -> Any:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        libc.mallopt, libc.malloc_trim  # noqa: B018 - present in glibc only
    except (OSError, AttributeError):
        return None
    return libc


#: glibc's own thresholds, which a block's end sets back (the dynamic raising of the mmap
#: threshold, once a program fixes it, stays off: glibc has no call to turn it back on).
_GLIBC_DEFAULT_THRESHOLD = 128 * 1024


@contextmanager
def small_heap() -> Iterator[bool]:
    """glibc's mmap and trim thresholds at :data:`MMAP_THRESHOLD` for the block; whether they
    were set. glibc's defaults come back after it."""
    libc = _glibc()
    ok = libc is not None and bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        libc.mallopt(_M_TRIM_THRESHOLD, MMAP_THRESHOLD))
    try:
        yield ok
    finally:
        if libc is not None:
            libc.mallopt(_M_MMAP_THRESHOLD, _GLIBC_DEFAULT_THRESHOLD)
            libc.mallopt(_M_TRIM_THRESHOLD, _GLIBC_DEFAULT_THRESHOLD)


@contextmanager
def owned_process(*, offline: bool = False) -> Iterator[None]:
    """What a training or generation command holds while it runs: CPU floats with denormals
    flushed (full speed), the small heap and quiet tokenizers; with ``offline``, the hub
    offline too (the experiments, which read the embedded model only). Everything comes back
    as it was after the command, so a command run in-process (the tests, a notebook) leaves
    the process's floating-point mode, allocator and environment untouched."""
    from spade_designer.llm.transformers_backend import flush_denormal_for_process

    saved = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TOKENIZERS_PARALLELISM")}
    if offline:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        with ExitStack() as stack:
            stack.enter_context(flush_denormal_for_process())
            stack.enter_context(small_heap())
            yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def return_freed_memory() -> None:
    """Give the free memory at the top of glibc's heaps back to the system."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


__all__ = ["MMAP_THRESHOLD", "owned_process", "return_freed_memory", "small_heap"]
