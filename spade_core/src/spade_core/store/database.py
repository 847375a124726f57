"""The connection side of the store: engines, SQLite settings, write transactions, retries
and the translation of driver failures into :class:`~spade_core.errors.StoreError`.

SQLite runs in WAL mode (readers never block the writer) with a busy timeout, and every
write transaction starts with ``BEGIN IMMEDIATE``: taking the write lock up front means
concurrent writers queue on the busy timeout instead of failing with "database is locked"
when a deferred transaction tries to upgrade its read lock. PostgreSQL needs neither;
its races (two writers claiming the same new version) surface as integrity errors and
the whole transaction is retried.
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event, exc
from sqlalchemy.engine import URL, make_url
from sqlalchemy.pool import StaticPool

from ..errors import StoreError
from .checkpoints import Checkpointer

T = TypeVar("T")

#: Seconds a SQLite writer waits for the lock before the driver gives up (then we retry).
BUSY_TIMEOUT_S = 30.0
#: Whole-transaction retries after a lock timeout or a lost race.
WRITE_RETRIES = 8

#: Bytes the WAL file is truncated to after a checkpoint.
JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024

_WRITE_OPTION = "spade_write"


@dataclass
class Database:
    """An engine plus what error messages need to name it."""

    url: URL
    engine: Engine
    #: The SQLite file path, or the URL with its password hidden.
    where: str
    sqlite_path: Path | None
    #: Checkpoints a file-backed SQLite store off the writers' path (see :mod:`.checkpoints`).
    checkpointer: Checkpointer | None = None

    @property
    def is_sqlite(self) -> bool:
        return self.url.get_backend_name() == "sqlite"

    @contextmanager
    def reading(self, action: str) -> Iterator[Connection]:
        """A connection in a read transaction; failures become StoreError naming the store."""
        with translate_errors(self.where, action), self.engine.connect() as conn:
            with conn.begin():
                yield conn

    def write(self, action: str, work: Callable[[Connection], T], *, retry_conflicts: bool = True) -> T:
        """Run ``work`` in one write transaction, retrying it whole on lock timeouts and races.

        ``work`` must be safe to run again (it re-reads what it depends on).
        """
        result = self._retrying(action, work, write=True, retry_conflicts=retry_conflicts)
        if self.checkpointer is not None:
            self.checkpointer.note_write()
        return result

    def write_sqlite(self, action: str, work: Callable[[sqlite3.Connection], T]) -> T:
        """:meth:`write` for SQLite, with ``work`` given the pooled driver connection in a
        ``BEGIN IMMEDIATE`` transaction: no SQLAlchemy ``Connection``, events or result
        objects, which cost more than SQLite's own work for a one-row transaction. Same
        pool, connection settings, retries and error translation as :meth:`write`;
        anything ``work`` raises rolls the transaction back.
        """
        if not self.is_sqlite:
            raise TypeError("write_sqlite() is for SQLite stores")
        delay = 0.01
        for attempt in range(WRITE_RETRIES + 1):
            try:
                with translate_errors(self.where, action, reraise=_retryable_driver):
                    pooled = self.engine.raw_connection()
                    try:
                        driver = pooled.driver_connection
                        assert driver is not None  # a checked-out connection is open
                        driver.execute("BEGIN IMMEDIATE")
                        try:
                            result = work(driver)
                        except BaseException:
                            driver.execute("ROLLBACK")
                            raise
                        driver.execute("COMMIT")
                    finally:
                        pooled.close()  # back to the pool
            except sqlite3.OperationalError as err:
                if attempt == WRITE_RETRIES:
                    raise StoreError(f"{self.where}: {action} failed: {_driver_message(err)}") from None
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 1.0)
                continue
            if self.checkpointer is not None:
                self.checkpointer.note_write()
            return result
        raise AssertionError("unreachable")  # pragma: no cover

    def read(self, action: str, work: Callable[[Connection], T]) -> T:
        """Run ``work`` in one read transaction, retried on lock timeouts: a connection's
        first ``PRAGMA journal_mode = WAL`` can meet "database is locked" without waiting
        on the busy timeout when several processes open a fresh store at once."""
        return self._retrying(action, work, write=False, retry_conflicts=True)

    def _retrying(self, action: str, work: Callable[[Connection], T], *, write: bool, retry_conflicts: bool) -> T:
        delay = 0.01
        for attempt in range(WRITE_RETRIES + 1):
            try:
                with translate_errors(self.where, action, reraise=_retryable):
                    with self.engine.connect() as conn:
                        if write:
                            conn.execution_options(**{_WRITE_OPTION: True})
                        with conn.begin():
                            return work(conn)
            except exc.DBAPIError as err:
                if attempt == WRITE_RETRIES or (isinstance(err, exc.IntegrityError) and not retry_conflicts):
                    raise StoreError(f"{self.where}: {action} failed: {_driver_message(err)}") from None
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 1.0)
        raise AssertionError("unreachable")  # pragma: no cover

    def dispose(self) -> None:
        self.engine.dispose()
        if self.checkpointer is not None:
            self.checkpointer.close()


def _retryable(err: BaseException) -> bool:
    if isinstance(err, exc.IntegrityError):
        return True
    if isinstance(err, exc.OperationalError):
        text = str(getattr(err, "orig", err)).lower()
        code = getattr(getattr(err, "orig", None), "sqlstate", None)
        return "locked" in text or "busy" in text or code in {"40001", "40P01"}
    return False


def _retryable_driver(err: BaseException) -> bool:
    """A lock timeout of the sqlite3 driver itself (``write_sqlite`` retries those)."""
    text = str(err).lower()
    return isinstance(err, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def _driver_message(err: BaseException) -> str:
    orig = getattr(err, "orig", None) or err
    text = (str(orig).strip().splitlines() or [type(orig).__name__])[0]
    lowered = text.lower()
    if "file is not a database" in lowered:
        return "not a SQLite database (garbage, encrypted or not a store file)"
    if "malformed" in lowered or "disk image" in lowered:
        return f"the database file is corrupted ({text})"
    if "unable to open database file" in lowered:
        return "cannot open the database file (missing directory or no permission)"
    return text


@contextmanager
def translate_errors(
    where: str, action: str, *, reraise: Callable[[BaseException], bool] | None = None
) -> Iterator[None]:
    """Turn driver and SQLAlchemy failures into StoreError naming ``where``.

    Errors for which ``reraise`` says yes pass through untouched (the caller retries them).
    """
    try:
        yield
    except StoreError:
        raise
    except (exc.SQLAlchemyError, sqlite3.Error) as err:
        if reraise is not None and reraise(err):
            raise
        error = StoreError(f"{where}: {action} failed: {_driver_message(err)}")
        error.cause = err  # type: ignore[attr-defined]  # kept for debugging, not chained
        raise error from None


def describe(url: URL) -> str:
    if url.get_backend_name() == "sqlite":
        return str(Path(url.database)) if url.database and url.database != ":memory:" else "in-memory SQLite store"
    return url.render_as_string(hide_password=True)


def open_database(url: str, *, create: bool) -> Database:
    """Build the engine for ``url``; for SQLite check the file first so errors name it."""
    try:
        parsed = make_url(url)
    except exc.ArgumentError as err:
        raise StoreError(f"invalid store URL {url!r}: {err}") from None
    where = describe(parsed)
    if parsed.get_backend_name() != "sqlite":
        try:
            engine = create_engine(parsed, pool_pre_ping=True, future=True)
        except (exc.SQLAlchemyError, ImportError) as err:
            raise StoreError(f"{where}: cannot use this store URL: {err}") from None
        return Database(parsed, engine, where, None)

    database = parsed.database
    memory = not database or database == ":memory:"
    path: Path | None = None
    if memory or database is None:
        engine = create_engine(
            "sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False}, future=True
        )
    else:
        path = Path(database).expanduser()
        if path.is_dir():
            raise StoreError(f"{path}: is a directory, not a store file")
        if not path.exists():
            if not create:
                missing = "directory" if not path.parent.is_dir() else "file"
                raise StoreError(f"{path}: store {missing} does not exist (opened with create=False)")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise StoreError(f"{path}: cannot create the store's directory: {err.strerror}") from None
        engine = create_engine(
            parsed.set(database=str(path)),
            connect_args={"timeout": BUSY_TIMEOUT_S, "check_same_thread": False},
            future=True,
        )
    _configure_sqlite(engine, wal=not memory)
    checkpointer = Checkpointer(path, int(BUSY_TIMEOUT_S * 1000)) if path is not None else None
    return Database(parsed, engine, where, path, checkpointer)


def _configure_sqlite(engine: Engine, *, wal: bool) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event below decide how transactions start.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        try:
            cur.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            if wal:
                cur.execute("PRAGMA journal_mode = WAL")
                # Durability, stated honestly: with WAL, NORMAL never corrupts the database
                # and loses nothing committed when a process crashes or is killed; only a
                # power loss or OS crash can drop the last commits (those since the last
                # checkpoint's fsync). FULL would fsync every commit (~10x slower here).
                cur.execute("PRAGMA synchronous = NORMAL")
                # Checkpoints (copy WAL pages into the database file, fsync) run in the
                # store's Checkpointer thread, not inside a writer's commit; the WAL file
                # is cut back to JOURNAL_SIZE_LIMIT after each.
                cur.execute("PRAGMA wal_autocheckpoint = 0")
                cur.execute(f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT}")
            cur.execute("PRAGMA foreign_keys = ON")
        finally:
            cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get(_WRITE_OPTION, False)
        # Straight to the driver: a statement through SQLAlchemy costs more than BEGIN itself.
        driver = conn.connection.driver_connection
        assert driver is not None  # a connection inside its "begin" event is open
        driver.execute("BEGIN IMMEDIATE" if write else "BEGIN")
