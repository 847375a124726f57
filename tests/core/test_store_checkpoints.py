"""WAL checkpoints of a SQLite store run in the store's checkpointer thread, not inside a
writer's commit (spade_core.store.checkpoints)."""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time
from pathlib import Path

from spade_core.metadata import EnvMetadata
from spade_core.store import EnvStore

from .test_store_backends import env_source


def meta(name: str) -> EnvMetadata:
    return EnvMetadata(name=name, domain="d", skill="s")


def rows_in_main_file(path: Path, tmp: Path) -> int:
    """Rows the database file holds by itself (what a checkpoint has copied out of the WAL);
    -1 while it holds no readable table yet (no checkpoint so far, or one mid-copy)."""
    copy = tmp / f"main-only-{time.monotonic_ns()}.db"
    shutil.copyfile(path, copy)
    conn = sqlite3.connect(copy)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM envs").fetchone()[0])
    except sqlite3.DatabaseError:
        return -1
    finally:
        conn.close()


def checkpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("spade-checkpoint")]


def test_writes_reach_the_database_file_while_the_store_stays_open(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with EnvStore(f"sqlite:///{path}") as store:
        for i in range(20):  # a few dozen WAL pages: SQLite's own checkpoint waits for 1,000
            store.add(env_source(f"e{i}"), meta(f"e{i}"))
        deadline = time.monotonic() + 30  # generous: the machine is shared; success comes in ~0.5 s
        rows = rows_in_main_file(path, tmp_path)
        while rows != 20 and time.monotonic() < deadline:
            time.sleep(0.1)
            rows = rows_in_main_file(path, tmp_path)
        assert rows == 20
        with store._db.engine.connect() as conn:  # the writers do not checkpoint themselves
            assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 0


def test_closing_the_store_leaves_nothing_only_in_the_wal_and_stops_the_thread(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    before = set(checkpoint_threads())
    store = EnvStore(f"sqlite:///{path}")
    store.add_many((env_source(f"e{i}"), meta(f"e{i}")) for i in range(50))
    assert len(set(checkpoint_threads()) - before) == 1
    store.close()
    assert set(checkpoint_threads()) - before == set()
    assert rows_in_main_file(path, tmp_path) == 50


def test_a_store_that_is_only_read_starts_no_thread_and_changes_no_byte(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with EnvStore(f"sqlite:///{path}") as store:
        store.add(env_source("e"), meta("e"))
    before_bytes, before_threads = path.read_bytes(), set(checkpoint_threads())
    with EnvStore(f"sqlite:///{path}") as store:
        assert store.get("e-v1").name == "e"
        assert set(checkpoint_threads()) == before_threads
    assert path.read_bytes() == before_bytes
