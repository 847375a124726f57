"""Keeping a CPU training process's resident memory near what it holds.

glibc's allocator serves requests below its mmap threshold from its heaps and raises that
threshold (up to 32 MB) each time a large block is freed, so the tensors a rollout and an
update allocate and free by the thousand end up in heaps it rarely gives back: a learning
run of the 135M model held about twice the memory it used (docs/learning.md, Cost).
:func:`use_small_heap_for_process` fixes the threshold at 1 MB (every larger tensor is its
own mapping, returned when freed); :func:`return_freed_memory` hands the heaps' free tops
back after a phase. Both do nothing where the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
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


def use_small_heap_for_process() -> bool:
    """Fix glibc's mmap threshold at :data:`MMAP_THRESHOLD` for the rest of this process
    (a command that owns its process calls it); whether it was set."""
    libc = _glibc()
    if libc is None:
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(libc.mallopt(_M_TRIM_THRESHOLD, MMAP_THRESHOLD))


def return_freed_memory() -> None:
    """Give the free memory at the top of glibc's heaps back to the system."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


__all__ = ["MMAP_THRESHOLD", "return_freed_memory", "use_small_heap_for_process"]
