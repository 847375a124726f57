"""The connection side of the store: engines, SQLite settings, write transactions, retries
and the translation of driver failures into :class:`~spade_core.errors.StoreError`.

SQLite runs in WAL mode (readers never block the writer) with a busy timeout, and every
write transaction starts with ``BEGIN IMMEDIATE``: taking the write lock up front means
concurrent writers queue on the busy timeout instead of failing with "database is locked"
when a deferred transaction tries to upgrade its read lock. PostgreSQL needs neither;
its races (two writers claiming the same new version) surface as integrity errors and
the whole transaction is retried. A pooled PostgreSQL connection is pinged on checkout
only when it sat idle for more than :data:`PING_AFTER_IDLE_S` (a ping is a round trip,
a third of a one-statement add), and a write that meets a dropped connection is retried
on a fresh one: every write of the store is safe to run again.
"""

from __future__ import annotations

import random
import select
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

#: A pooled PostgreSQL connection idle longer than this is pinged before use; one used more
#: recently is trusted (a connection that died in between fails its statement, and writes
#: retry that on a fresh connection).
PING_AFTER_IDLE_S = 1.0

#: SQLSTATEs of PostgreSQL after which the whole transaction is retried: serialization
#: failure, deadlock detected.
RETRY_SQLSTATES = frozenset({"40001", "40P01"})

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

    @property
    def is_psycopg(self) -> bool:
        """PostgreSQL through psycopg 3 (what :meth:`write_statement` needs)."""
        return self.engine.dialect.name == "postgresql" and self.engine.dialect.driver == "psycopg"

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

    def write_statement(self, action: str, work: Callable[[Any], T]) -> T:
        """:meth:`write` for PostgreSQL (psycopg 3) in one round trip: ``work`` gets the psycopg
        connection of a pooled connection in autocommit mode, so each statement it runs is
        its own transaction; ``work`` must put everything that belongs together into one
        statement and be safe to run again. Retried whole on serialization failures,
        deadlocks and dropped connections (the connection is then discarded); anything
        else becomes :class:`StoreError` naming the store.
        """
        if not self.is_psycopg:
            raise TypeError("write_statement() is for PostgreSQL stores reached through psycopg")
        driver_error: type[BaseException] = self.engine.dialect.loaded_dbapi.Error

        def retryable(err: BaseException) -> bool:
            if isinstance(err, exc.DBAPIError):  # from the pool, checking a connection out
                return _retryable(err) and not isinstance(err, exc.IntegrityError)
            return getattr(err, "sqlstate", None) in RETRY_SQLSTATES

        delay = 0.01
        for attempt in range(WRITE_RETRIES + 1):
            try:
                with translate_errors(self.where, action, reraise=retryable, driver_errors=(driver_error,)):
                    return self._in_autocommit(work, driver_error)
            except (exc.DBAPIError, driver_error, _DroppedConnection) as err:
                if attempt == WRITE_RETRIES:
                    raise StoreError(f"{self.where}: {action} failed: {_driver_message(err)}") from None
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 1.0)
        raise AssertionError("unreachable")  # pragma: no cover

    def _in_autocommit(self, work: Callable[[Any], T], driver_error: type[BaseException]) -> T:
        pooled = self.engine.raw_connection()
        driver = pooled.driver_connection
        assert driver is not None  # a checked-out connection is open
        try:
            try:
                driver.autocommit = True
                return work(driver)
            except driver_error as err:
                if driver.broken or driver.closed:
                    raise _DroppedConnection(_driver_message(err)) from None
                raise
            finally:
                if not (driver.broken or driver.closed):
                    driver.autocommit = False  # as the pool and SQLAlchemy's Connection expect it
        finally:
            if driver.broken or driver.closed:
                pooled.invalidate()  # the pool opens a fresh connection next time
            pooled.close()

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
    if isinstance(err, exc.DBAPIError) and err.connection_invalidated:
        return True  # a dropped connection: SQLAlchemy discarded it; the retry gets another
    if isinstance(err, exc.OperationalError):
        text = str(getattr(err, "orig", err)).lower()
        code = getattr(getattr(err, "orig", None), "sqlstate", None)
        return "locked" in text or "busy" in text or code in RETRY_SQLSTATES
    return False


class _DroppedConnection(Exception):
    """The connection broke under a statement (whether it committed is unknown): retry the
    write, which is safe to run again, on a fresh connection."""


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
    where: str,
    action: str,
    *,
    reraise: Callable[[BaseException], bool] | None = None,
    driver_errors: tuple[type[BaseException], ...] = (),
) -> Iterator[None]:
    """Turn driver and SQLAlchemy failures into StoreError naming ``where``.

    ``driver_errors``: further base classes to translate (a driver used without SQLAlchemy
    in between; sqlite3's are always translated). Errors for which ``reraise`` says yes
    pass through untouched (the caller retries them).
    """
    translated: tuple[type[BaseException], ...] = (exc.SQLAlchemyError, sqlite3.Error, *driver_errors)
    try:
        yield
    except StoreError:
        raise
    except translated as err:
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
            engine = create_engine(parsed, future=True)
        except (exc.SQLAlchemyError, ImportError) as err:
            raise StoreError(f"{where}: cannot use this store URL: {err}") from None
        _ping_idle_connections(engine)
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


_USED_AT = "spade_used_at"


def _ping_idle_connections(engine: Engine) -> None:
    """SQLAlchemy's ``pool_pre_ping``, but only for connections idle more than
    :data:`PING_AFTER_IDLE_S` or with input waiting: a writer adding in a loop would
    otherwise pay a round trip per add for a check that almost never fails between two
    uses a millisecond apart. Input on an idle connection (we never LISTEN) is the
    server's goodbye when it terminated the session or shut down; checking for it is a
    local poll, not a round trip."""

    @event.listens_for(engine, "connect")
    def _on_connect(_dbapi_conn: Any, record: Any) -> None:
        record.info[_USED_AT] = time.monotonic()

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_conn: Any, record: Any) -> None:
        record.info[_USED_AT] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        used_at = record.info.get(_USED_AT)
        if used_at is not None and time.monotonic() - used_at <= PING_AFTER_IDLE_S and not _input_waiting(dbapi_conn):
            return
        try:
            engine.dialect.do_ping(dbapi_conn)
        except engine.dialect.loaded_dbapi.Error as err:
            # The pool discards this connection and checks out (or opens) another.
            raise exc.DisconnectionError(f"pooled connection failed its ping: {err}") from None


def _input_waiting(dbapi_conn: Any) -> bool:
    """Whether the server sent something to an idle connection (or it has no socket)."""
    try:
        poller = select.poll()
        poller.register(dbapi_conn.fileno(), select.POLLIN)
        return bool(poller.poll(0))
    except Exception:  # a closed connection's fileno() raises the driver's own error
        return True  # let the ping decide


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
