"""The driver-level claim of ``add()`` (one autocommit statement on PostgreSQL, plain
inserts in one transaction on SQLite) against the full rules it stands in for.

For any sequence of adds (same code, other code, ``new_version``, parents, self-parents)
both give the same results, the same errors and the same stored rows, code and lineage
edges; concurrent writer processes going through it never lose or duplicate a version;
a writer killed in the middle of adds leaves only whole environments; a dropped
connection is retried on a fresh one.
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import signal
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spade_core.errors import StoreError
from spade_core.metadata import EnvMetadata, code_hash
from spade_core.store import EnvStore
from spade_core.store.schema import blobs, parents
from sqlalchemy import event, select

from . import test_store_backends as backends
from .test_store_backends import BACKENDS, env_source, meta

postgres_url, store_url = backends.postgres_url, backends.store_url

CTX = mp.get_context("fork")
_unique = itertools.count()


# --- two stores on one backend: one with the driver-level claim, one without -----------------


@dataclass
class Pair:
    fast: EnvStore
    full: EnvStore


@pytest.fixture(params=BACKENDS)
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Pair]:
    urls: list[str] = []
    schemas: list[str] = []
    admin: Any = None
    if request.param == "sqlite":
        urls = [f"sqlite:///{tmp_path / 'fast.db'}", f"sqlite:///{tmp_path / 'full.db'}"]
    else:
        import sqlalchemy

        base = backends.postgres_base_url()
        admin = sqlalchemy.create_engine(base)
        sep = "&" if "?" in base else "?"
        for _ in range(2):
            schema = f"spade_test_{uuid.uuid4().hex[:12]}"
            with admin.begin() as conn:
                conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
            schemas.append(schema)
            urls.append(f"{base}{sep}options={quote(f'-csearch_path={schema}')}")
    fast, full = EnvStore(urls[0]), EnvStore(urls[1])
    full._driver_claims = False
    try:
        yield Pair(fast, full)
    finally:
        fast.close()
        full.close()
        if admin is not None:
            with admin.begin() as conn:
                for schema in schemas:
                    conn.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
            admin.dispose()


def _outcome(store: EnvStore, source: str, m: EnvMetadata, new_version: bool) -> tuple[Any, ...]:
    try:
        return ("stored", store.add(source, m, new_version=new_version))
    except StoreError as err:  # the message names the store: compare the rest
        return ("refused", type(err).__name__, str(err).replace(store.where, "<store>"))


def _state(store: EnvStore, prefix: str, hashes: list[str]) -> tuple[Any, ...]:
    """Everything an example stored: records in insertion order, their code, the code
    rows among ``hashes`` and every lineage edge."""
    records = [m for m in store.find() if m.name.startswith(prefix)]
    sources = [store.get_source(m.id) for m in records]
    ids = [m.id for m in records]
    with store._reading("test") as conn:
        stored_hashes = sorted(conn.execute(select(blobs.c.code_hash).where(blobs.c.code_hash.in_(hashes))).scalars())
        edges = sorted(
            tuple(row)
            for row in conn.execute(
                select(parents.c.child_id, parents.c.position, parents.c.parent_id).where(parents.c.child_id.in_(ids))
            )
        ) if ids else []
    return records, sources, stored_hashes, edges


# One add: which name, version (or one beyond what a store holds) and code (of three each),
# new_version, a skill (an idempotent re-add with another skill must return the stored
# record), parents (by name and version, "self" meaning the add's own id, or an id the
# store does not hold).
adds = st.tuples(
    st.integers(0, 2),
    st.integers(1, 3) | st.just(2**31),
    st.integers(0, 2),
    st.booleans(),
    st.sampled_from(["s", "t"]),
    st.lists(st.sampled_from(["n0-v1", "n1-v2", "self", "elsewhere-v9"]), max_size=3),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(plan=st.lists(adds, min_size=1, max_size=14))
def test_the_driver_claim_and_the_full_rules_agree_on_any_sequence_of_adds(pair: Pair, plan: list[tuple]) -> None:
    tag = next(_unique)
    prefix = f"g{tag}_"
    codes = [env_source(f"agree-{tag}-{k}") for k in range(3)]
    for name_k, version, code_k, new_version, skill, parent_refs in plan:
        name = f"{prefix}n{name_k}"
        own_id = f"{name}-v{version}"
        parent_ids = [own_id if p == "self" else f"{prefix}{p}" for p in parent_refs]
        m = EnvMetadata(name=name, version=version, domain="d", skill=skill, parent_ids=parent_ids)
        fast = _outcome(pair.fast, codes[code_k], m, new_version)
        full = _outcome(pair.full, codes[code_k], m, new_version)
        assert fast == full, (name, version, code_k, new_version)
    hashes = [code_hash(c) for c in codes]
    assert _state(pair.fast, prefix, hashes) == _state(pair.full, prefix, hashes)


# --- the common case takes the driver path ------------------------------------------------------


def test_adding_a_free_id_runs_no_sqlalchemy_statement_and_a_taken_one_takes_the_full_rules(store_url: str) -> None:
    with EnvStore(store_url) as store:
        statements: list[str] = []
        event.listen(store._db.engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
        first = store.add(env_source("free"), meta("free", parent_ids=["elsewhere-v1"]))
        assert statements == []
        assert store.add(env_source("free"), meta("free", skill="other")) == first  # idempotent
        assert statements, "a taken id must be decided by the full rules"
        assert store.lineage(first.id) == [] and store.get_source(first.id) == env_source("free")


# --- dropped connections (PostgreSQL) ---------------------------------------------------------


def _terminate(store: EnvStore, backend_pid: int) -> None:
    """End a server session the way an administrator or a server restart does, and wait
    until it is gone."""
    import psycopg

    conninfo = store._db.url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (backend_pid,))
        deadline = time.monotonic() + 10
        while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (backend_pid,)).fetchone():
            assert time.monotonic() < deadline, "the session did not end"
            time.sleep(0.01)


def _pooled_backend(store: EnvStore) -> int:
    pooled = store._db.engine.raw_connection()
    try:
        return int(pooled.driver_connection.info.backend_pid)  # type: ignore[union-attr]
    finally:
        pooled.close()


@pytest.mark.postgres
def test_an_add_on_a_connection_the_server_dropped_is_retried_on_a_fresh_one(postgres_url: str) -> None:
    with EnvStore(postgres_url) as store:
        store.add(env_source("before"), meta("before"))
        dropped = _pooled_backend(store)
        _terminate(store, dropped)
        stored = store.add(env_source("after"), meta("after"))
        assert store.get(stored.id) == stored
        assert _pooled_backend(store) != dropped


@pytest.mark.postgres
def test_a_read_right_after_the_server_dropped_the_connection_gets_a_fresh_one(postgres_url: str) -> None:
    """Reads are not retried, and a connection used a moment ago is not pinged: the
    server's goodbye waiting on the socket is what marks it as dead on checkout."""
    with EnvStore(postgres_url) as store:
        stored = store.add(env_source("kept"), meta("kept"))
        for _ in range(3):
            dropped = _pooled_backend(store)
            _terminate(store, dropped)
            assert store.get(stored.id) == stored
            assert _pooled_backend(store) != dropped


@pytest.mark.postgres
def test_writes_through_sqlalchemy_on_a_connection_found_dead_only_in_use_are_retried(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the checkout check blinded, the dead connection is only discovered by the
    write's own statements: the whole transaction is run again on a fresh connection."""
    from spade_core.store import database

    with EnvStore(postgres_url) as store:
        stored = store.add(env_source("kept"), meta("kept"))
        monkeypatch.setattr(database, "_input_waiting", lambda _conn: False)
        _terminate(store, _pooled_backend(store))
        assert store.set_hint(stored.id, "look left").hint == "look left"
        _terminate(store, _pooled_backend(store))
        again = store.add(env_source("kept"), meta("kept"))  # dead connection, then taken: the full rules
        assert again.hint == "look left"


@pytest.mark.postgres
def test_a_statement_whose_connection_dies_under_it_is_run_again(postgres_url: str) -> None:
    """The connection breaks in the middle of the statement (no ping could have caught it):
    the write is retried whole on another connection."""
    with EnvStore(postgres_url) as store:
        calls = []

        def work(driver: Any) -> int:
            calls.append(driver.info.backend_pid)
            if len(calls) == 1:
                driver.execute("SELECT pg_terminate_backend(pg_backend_pid())")
            return int(driver.execute("SELECT 41 + 1").fetchone()[0])

        assert store._db.write_statement("testing", work) == 42
        assert len(calls) == 2 and calls[0] != calls[1]


@pytest.mark.postgres
def test_an_error_of_the_one_statement_claim_names_the_store_and_what_failed(postgres_url: str) -> None:
    with EnvStore(postgres_url) as store:
        with pytest.raises(StoreError, match=r"testing failed: .*division by zero") as caught:
            store._db.write_statement("testing", lambda driver: driver.execute("SELECT 1 / 0"))
        assert store.where in str(caught.value)
        assert store.add(env_source("fine"), meta("fine")).id == "fine-v1"  # the pool is fine


def test_write_statement_is_for_postgresql_only(tmp_path: Path) -> None:
    with EnvStore(f"sqlite:///{tmp_path / 'store.db'}") as store, pytest.raises(TypeError, match="PostgreSQL"):
        store._db.write_statement("testing", lambda driver: None)


# --- concurrent writer processes ------------------------------------------------------------

WRITERS = 4
NAMES = ("alpha", "beta", "gamma")
VERSIONS = 6


def _contending_writer(url: str, worker: int, out: mp.Queue) -> None:
    """Adds every (name, version) with the code of its parity (two writers per code), then
    three new versions of one shared name with codes the others also add."""
    outcomes = []
    with EnvStore(url) as store:
        for version in range(1, VERSIONS + 1):
            for name in NAMES:
                source = env_source(f"{name}-{version}-{worker % 2}")
                try:
                    outcomes.append((name, version, worker % 2, store.add(source, meta(name, version=version)).code_hash))
                except StoreError as err:
                    assert "already exists with different code" in str(err), err
                    outcomes.append((name, version, worker % 2, None))
        for k in range(3):
            outcomes.append(("shared", 0, k, store.add(env_source(f"shared-{(worker + k) % 4}"), meta("shared"),
                                                      new_version=True).id))
    out.put(outcomes)


def test_concurrent_writers_through_the_driver_claim_never_lose_or_duplicate_a_version(store_url: str) -> None:
    EnvStore(store_url).close()  # the schema, once
    out: mp.Queue = CTX.Queue()
    procs = [CTX.Process(target=_contending_writer, args=(store_url, w, out)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    results = [out.get(timeout=240) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with EnvStore(store_url) as store:
        for name in NAMES:
            stored = store.versions(name)
            assert [m.version for m in stored] == list(range(1, VERSIONS + 1))
            for m in stored:
                candidates = {code_hash(env_source(f"{name}-{m.version}-{parity}")) for parity in (0, 1)}
                assert m.code_hash in candidates
        for outcomes in results:
            for name, version, parity, got in outcomes:
                if name == "shared":
                    continue
                stored_hash = store.get(f"{name}-v{version}").code_hash
                mine = code_hash(env_source(f"{name}-{version}-{parity}"))
                # a writer got the record back exactly when its code is the stored one, else a refusal
                assert got == (stored_hash if stored_hash == mine else None)
        shared = store.versions("shared")
        assert [m.version for m in shared] == list(range(1, len(shared) + 1))
        assert sorted(store.get_source(m.id) for m in shared) == sorted(env_source(f"shared-{k}") for k in range(4))
        assert store.count() == len(NAMES) * VERSIONS + 4


# --- a writer killed in the middle of adds ------------------------------------------------------


def _endless_adds(url: str, ready: Any) -> None:
    with EnvStore(url) as store:
        for i in itertools.count():
            store.add(env_source(f"k{i}"), meta(f"k{i}", parent_ids=[f"k{i - 1}-v1", f"k{i - 2}-v1", "root-v1"]))
            if i == 20:
                ready.set()


@pytest.mark.parametrize("delay", [0.0, 0.07, 0.31])
def test_a_writer_killed_during_adds_leaves_only_whole_environments(store_url: str, delay: float) -> None:
    EnvStore(store_url).close()
    ready = CTX.Event()
    proc = CTX.Process(target=_endless_adds, args=(store_url, ready))
    proc.start()
    assert ready.wait(120), "writer made no progress"
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(30)
    with EnvStore(store_url, create=False) as store:
        stored = store.find()
        assert [m.name for m in stored] == [f"k{i}" for i in range(len(stored))]  # no gap, nothing half
        for m in stored:
            assert store.get_source(m.id) == env_source(m.name)
        with store._reading("test") as conn:
            edges = conn.execute(select(parents.c.child_id)).scalars().all()
        assert sorted(edges) == sorted(m.id for m in stored for _ in range(3))
        nxt = len(stored)
        store.add(env_source(f"k{nxt}"), meta(f"k{nxt}"))  # writable, no lock left behind
