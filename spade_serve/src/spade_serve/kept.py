"""What a server keeps in memory on clients' behalf, beyond its sessions: one budget.

A server keeps environments it was not started with: on a whole-registry server, the store
environments clients name (resolved on first use), and for the Task API, the knob settings
an environment offers and the variants that play them (their own sources). Clients choose
which, so without a bound they choose how much memory the server holds. :class:`KeptEnvs`
is the one place all of it is kept: least recently used first out, at most
:data:`MAX_ENTRIES` entries and :data:`MAX_BYTES` bytes (each entry counted at its value's
size: a source's string, a list of settings), shared by the catalog
(:class:`spade_serve.catalog.EnvCatalog`) and the Task API
(:class:`spade_serve.tasks.TaskCatalog`) of a server. A dropped entry is made again when
next asked for (read from the store, parsed again); whoever holds it (an open session)
keeps its own reference.

Requests that are refused keep nothing: the routes check a client's room for a session
before naming any environment (:meth:`spade_serve.sessions.SessionManager.check_room`).
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import TypeVar

#: Entries kept at most (store environments resolved, knob settings lists and variants).
MAX_ENTRIES = 512
#: Bytes kept at most, counted as each entry's size in memory (a source of 400 KB is about
#: 400 KB). 64 MiB: a registry's usual sources (a few KB) fill the entries first.
MAX_BYTES = 64 << 20

V = TypeVar("V")


class KeptEnvs:
    """A least-recently-used store of values by key, bounded in entries and in bytes;
    thread-safe (lookups run in the server's call threads)."""

    def __init__(self, *, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError(f"a budget needs room: max_entries={max_entries}, max_bytes={max_bytes}")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> object | None:
        """The value kept under ``key`` (now the most recently used), or ``None``."""
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            self._items.move_to_end(key)
            return hit[0]

    def keep(self, key: Hashable, value: V, size: int) -> V:
        """Keep ``value`` (``size`` bytes) under ``key`` unless one is kept there already;
        the value kept. Older entries go until both bounds hold; a value larger than the
        whole budget is returned without being kept."""
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit[0]  # type: ignore[return-value]
            if size > self.max_bytes:
                return value
            self._items[key] = (value, size)
            self._bytes += size
            while len(self._items) > self.max_entries or self._bytes > self.max_bytes:
                _, (_, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped
            return value

    def keys(self) -> list[Hashable]:
        """The keys kept, least recently used first."""
        with self._lock:
            return list(self._items)

    @property
    def bytes(self) -> int:
        """Bytes kept now (the sum of the entries' sizes)."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)


def source_size(source: str) -> int:
    """What a source costs kept: its string's size in memory."""
    return sys.getsizeof(source)


__all__ = ["MAX_BYTES", "MAX_ENTRIES", "KeptEnvs", "source_size"]
