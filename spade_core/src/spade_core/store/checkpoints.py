"""WAL checkpoints of a SQLite store, off the writer's path.

In WAL mode a commit appends pages to the ``-wal`` file (no fsync with
``synchronous = NORMAL``); a *checkpoint* copies them into the database file and fsyncs
it. SQLite's automatic checkpoint runs inside whichever commit crosses the threshold, so
the writer waits for that fsync: on the shared VM disk it measured 0.1 s each, about half
of the wall time of a one-environment-per-transaction writer. An :class:`Checkpointer`
runs ``PRAGMA wal_checkpoint(PASSIVE)`` on its own connection in a daemon thread instead,
at most every :data:`MIN_INTERVAL_S`, after writes; the store's connections disable the
automatic checkpoint.

Durability and safety are SQLite's own and unchanged: a checkpoint is crash-safe
wherever it runs, committed data is in the WAL before the commit returns, and a passive
checkpoint never blocks readers or writers (it copies what it can and stops). A process
that exits with pages left in the WAL loses nothing: the next connection reads them from
the WAL, and the last connection to close checkpoints.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from pathlib import Path

#: Seconds between two checkpoints (bounds the fsync rate; the WAL grows meanwhile).
MIN_INTERVAL_S = 0.5


class Checkpointer:
    """Checkpoints one SQLite file after writes (``note_write``), in a daemon thread that
    starts with the first write: a store only read from starts no thread and never
    checkpoints (it leaves the file exactly as it found it)."""

    def __init__(self, path: Path, busy_timeout_ms: int) -> None:
        self._path = path
        self._busy_timeout_ms = busy_timeout_ms
        self._wanted = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(self, _stop, self._stopping, self._wanted)

    def note_write(self) -> None:
        """A write transaction committed: checkpoint soon."""
        if self._thread is None:
            with self._lock:
                if self._thread is None and not self._stopping.is_set():
                    # The thread holds no reference to this object, so a store that is
                    # never closed is still collected, and its finalizer stops the thread.
                    thread = threading.Thread(
                        target=_run,
                        args=(self._path, self._busy_timeout_ms, self._wanted, self._stopping),
                        name=f"spade-checkpoint {self._path.name}",
                        daemon=True,
                    )
                    thread.start()
                    self._thread = thread
        self._wanted.set()

    def close(self) -> None:
        """Stop the thread after one last checkpoint; idempotent."""
        self._finalizer()
        with self._lock:
            thread = self._thread
        if thread is not None and thread.is_alive() and thread is not threading.current_thread():
            thread.join(timeout=30)


def _run(path: Path, busy_timeout_ms: int, wanted: threading.Event, stopping: threading.Event) -> None:
    try:
        conn = sqlite3.connect(path, timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False)
    except sqlite3.Error:
        return  # the writers' connections report problems with the file; nothing to add
    try:
        conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
        while not stopping.is_set():
            wanted.wait()
            wanted.clear()
            _checkpoint(conn)
            stopping.wait(MIN_INTERVAL_S)
        _checkpoint(conn)
    finally:
        conn.close()


def _checkpoint(conn: sqlite3.Connection) -> None:
    try:
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    except sqlite3.Error:
        pass  # busy or locked: the next write asks again


def _stop(stopping: threading.Event, wanted: threading.Event) -> None:
    stopping.set()
    wanted.set()
