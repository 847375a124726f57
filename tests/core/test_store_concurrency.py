"""Several writer processes on one store, and writers killed in the middle of a write.

The store must serialise writers without losing or duplicating anything (SQLite: WAL,
BEGIN IMMEDIATE, busy timeout; PostgreSQL: retried races), and a writer killed with
SIGKILL must leave the store consistent, readable and writable: its open transaction
vanishes as a whole.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest
from spade_core.metadata import StatsSnapshot
from spade_core.store import EnvStore

from . import test_store_backends as backends
from .test_store_backends import env_source, meta

postgres_url, store_url = backends.postgres_url, backends.store_url

# fork: the children only open their own store from the URL; nothing is shared.
CTX = mp.get_context("fork")
WRITERS = 4


def _writer(url: str, worker: int, n: int, out: mp.Queue) -> None:
    with EnvStore(url) as store:
        ids = []
        for i in range(n):
            ids.append(store.add(env_source(f"w{worker}-{i}"), meta(f"w{worker}_{i}")).id)
            ids.append(store.add(env_source("shared"), meta("shared")).id)  # idempotent for everyone
        # every writer claims a new version of the same name with its own code
        ids.append(store.add(env_source(f"contested-{worker}"), meta("contested"), new_version=True).id)
    out.put((worker, ids))


def _run(target, args_list) -> list:  # type: ignore[no-untyped-def]
    out: mp.Queue = CTX.Queue()
    procs = [CTX.Process(target=target, args=(*args, out)) for args in args_list]
    for p in procs:
        p.start()
    results = [out.get(timeout=240) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return results


def test_concurrent_writer_processes_lose_and_duplicate_nothing(store_url: str) -> None:
    EnvStore(store_url).close()  # create the schema once, as a deployment would
    n = 15
    results = dict(_run(_writer, [(store_url, w, n) for w in range(WRITERS)]))
    with EnvStore(store_url) as store:
        assert store.count() == WRITERS * n + 1 + 1 + (WRITERS - 1)
        for w in range(WRITERS):
            for i in range(n):
                assert store.get_source(f"w{w}_{i}-v1") == env_source(f"w{w}-{i}")
        contested = store.versions("contested")
        assert [m.version for m in contested] == list(range(1, WRITERS + 1))
        assert {store.get_source(m.id) for m in contested} == {env_source(f"contested-{w}") for w in range(WRITERS)}
        # each writer got back a distinct version of the contested name
        claimed = {ids[-1] for ids in results.values()}
        assert claimed == {f"contested-v{v}" for v in range(1, WRITERS + 1)}


def _stats_writer(url: str, worker: int, n: int, out: mp.Queue) -> None:
    with EnvStore(url) as store:
        for i in range(n):
            snap = StatsSnapshot(policy_snapshot=f"p{worker}-{i}", samples=i, win_rate=0.5)
            store.record_stats("counter-v1", snap)
    out.put(worker)


def test_concurrent_stats_updates_of_one_environment_are_all_kept(store_url: str) -> None:
    with EnvStore(store_url) as store:
        store.add(env_source(), meta("counter"))
    n = 8
    _run(_stats_writer, [(store_url, w, n) for w in range(WRITERS)])
    with EnvStore(store_url) as store:
        recorded = {s.policy_snapshot for s in store.get("counter-v1").stats}
    assert recorded == {f"p{w}-{i}" for w in range(WRITERS) for i in range(n)}


# --- killed writers ---------------------------------------------------------------------------

BATCH = 40


def _endless_batches(url: str, ready: mp.Event) -> None:
    with EnvStore(url) as store:
        batch = 0
        while True:
            store.add_many(
                ((env_source(f"b{batch}-{i}"), meta(f"b{batch}_{i}")) for i in range(BATCH)), batch_size=BATCH
            )
            batch += 1
            ready.set()


def _check_consistent(url: str) -> int:
    """Everything stored is whole: rows decode, code is present, batches are atomic."""
    with EnvStore(url, create=False) as store:
        envs = store.find()
        for m in envs:
            assert store.get_source(m.code_hash)
        assert len(envs) % BATCH == 0, f"{len(envs)} rows: a batch was partly committed"
        names = {m.name for m in envs}
        batches = {n.split("_")[0] for n in names}
        for b in batches:
            assert {f"{b}_{i}" for i in range(BATCH)} <= names
        store.add(env_source("after"), meta("after_the_kill"))  # the store is writable again
        return len(envs)


def _integrity_ok(url: str) -> None:
    path = url.removeprefix("sqlite:///")
    if url.startswith("sqlite:///"):
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.mark.parametrize("delay", [0.05, 0.23, 0.61])
def test_a_writer_killed_at_a_random_moment_leaves_a_consistent_store(store_url: str, delay: float) -> None:
    EnvStore(store_url).close()
    ready = CTX.Event()
    proc = CTX.Process(target=_endless_batches, args=(store_url, ready))
    proc.start()
    assert ready.wait(120), "writer made no progress"
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(30)
    assert proc.exitcode == -signal.SIGKILL
    _integrity_ok(store_url)
    assert _check_consistent(store_url) >= BATCH


def _killed_inside_a_transaction(url: str, inside: mp.Event) -> None:
    """Open a write transaction through the store's own machinery, insert half a batch with
    its real statements, announce it, and hang until killed."""
    from spade_core.store import codec
    from spade_core.store.adding import INSERT_BLOB, INSERT_ENV, blob_row

    store = EnvStore(url)

    def work(conn):  # type: ignore[no-untyped-def]
        for i in range(BATCH // 2):
            source = env_source(f"half-{i}")
            m = store._prepared(source, meta(f"half_{i}"))[1]
            conn.execute(INSERT_BLOB, blob_row(m.code_hash, source, "now"))
            conn.execute(INSERT_ENV, codec.row_values(m, codec.encode(m)))
        inside.set()
        time.sleep(600)

    store._db.write("half a batch", work)


def test_a_writer_killed_inside_its_transaction_leaves_no_trace_and_no_lock(store_url: str) -> None:
    with EnvStore(store_url) as store:
        store.add_many((env_source(f"b0-{i}"), meta(f"b0_{i}")) for i in range(BATCH))
    inside = CTX.Event()
    proc = CTX.Process(target=_killed_inside_a_transaction, args=(store_url, inside))
    proc.start()
    assert inside.wait(120), "writer never got inside its transaction"
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(30)
    _integrity_ok(store_url)
    with EnvStore(store_url) as store:
        assert store.count() == BATCH
        assert store.find(name="half_0") == []
        started = time.monotonic()
        store.add(env_source("next"), meta("next"))  # the dead writer's lock is gone
        assert time.monotonic() - started < 20


def test_threads_sharing_one_store_handle_write_safely(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with EnvStore(f"sqlite:///{tmp_path / 'store.db'}") as store:
        with ThreadPoolExecutor(4) as pool:
            ids = list(pool.map(lambda i: store.add(env_source(f"t{i}"), meta(f"t{i}")).id, range(60)))
        assert sorted(ids) == sorted(f"t{i}-v1" for i in range(60))
        assert store.count() == 60
