"""Read-only access to a SQLite store with the standard library only.

``import spade_core`` registers every admitted environment, and ``gymnasium.make`` of a
stored one needs its document and code; both run in fresh interpreters where importing
SQLAlchemy and pydantic would cost more than the whole job. These functions read the same
tables :class:`~spade_core.store.EnvStore` writes (names from :mod:`.layout`) and never
create, migrate or write anything. When a store needs migrating, or the URL is not a
SQLite file, they return ``None`` and the caller uses :class:`EnvStore`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import StoreError
from . import id_snapshot
from .layout import (
    ADMITTED_IDS_SQL,
    ADMITTED_PREFIXED_SQL,
    ADMITTED_SET_VERSION_SQL,
    BLOBS_TABLE,
    ENVS_TABLE,
    SCHEMA_VERSION_SQL,
    STORE_SCHEMA_VERSION,
)


def sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///path`` URL; ``None`` for other URLs, in-memory or query options."""
    for prefix in ("sqlite:///", "sqlite+pysqlite:///"):
        if url.startswith(prefix):
            rest = url[len(prefix) :]
            if not rest or rest == ":memory:" or "?" in rest:
                return None
            return Path(rest).expanduser()
    return None


def _uri_path(path: str) -> str:
    """``path`` as the path of a SQLite ``file:`` URI: SQLite decodes ``%HH`` and ends the
    path at ``?`` or ``#``, so those three characters are escaped; everything else (spaces,
    non-ASCII) it takes as it is. (``urllib.parse.quote`` would do as well, at 5 ms of
    every fresh interpreter's import.)"""
    return path.replace("%", "%25").replace("?", "%3F").replace("#", "%23")


def _connect(path: Path) -> sqlite3.Connection:
    uri = f"file:{_uri_path(str(path.resolve()))}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=30.0, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 30000")
    return conn


def _fail(path: Path, action: str, err: sqlite3.Error) -> StoreError:
    text = str(err)
    if "file is not a database" in text:
        text = "not a SQLite database (garbage, encrypted or not a store file)"
    elif "malformed" in text:
        text = f"the database file is corrupted ({text})"
    return StoreError(f"{path}: {action} failed: {text}")


def _current(conn: sqlite3.Connection) -> bool:
    try:
        row = conn.execute(SCHEMA_VERSION_SQL).fetchone()
    except sqlite3.OperationalError as err:
        if "no such table" in str(err):
            return False
        raise
    return bool(row) and row[0] == STORE_SCHEMA_VERSION


@contextmanager
def _reading(path: Path, action: str, *, transaction: bool = False) -> Iterator[sqlite3.Connection | None]:
    """A read-only connection to the store at ``path``, or ``None`` when its schema is not
    the current one; closed on leaving. An SQLite error is a :class:`StoreError` naming
    ``path`` and ``action`` (or the opening). ``transaction``: everything read inside comes
    from one snapshot of the database."""
    try:
        conn = _connect(path)
    except sqlite3.Error as err:
        raise _fail(path, "opening the store", err) from None
    try:
        if transaction:
            conn.execute("BEGIN")
        yield conn if _current(conn) else None
    except sqlite3.Error as err:
        raise _fail(path, action, err) from None
    finally:
        conn.close()


def admitted_ids(path: Path) -> list[str] | None:
    """Admitted ids in insertion order; ``None`` when the schema is not the current one.

    Raises :class:`StoreError` naming ``path`` when the file is not a readable store.
    """
    with _reading(path, "listing admitted environments") as conn:
        return None if conn is None else [row[0] for row in conn.execute(ADMITTED_IDS_SQL)]


def admitted_prefixed_ids(path: Path, prefix: str) -> list[str] | None:
    """``prefix + id`` of every admitted environment, in no particular order (the registry's
    bulk read: one index scan, one string); ``None`` when the schema is not the current one."""
    with _reading(path, "listing admitted environments") as conn:
        if conn is None:
            return None
        joined = conn.execute(ADMITTED_PREFIXED_SQL, (prefix,)).fetchone()[0]
    return joined.split("\n") if joined else []


def admitted_snapshot(path: Path, prefix: str) -> tuple[list[str], list[str]] | None:
    """``(prefix + id, name)`` lists of every admitted environment, in no particular order:
    the registry's bulk read. Served from the id snapshot next to the store when it was
    taken at the store's current admitted-set version (see :mod:`.id_snapshot`), else read
    from the store and the snapshot refreshed. ``None`` when the schema is not the current
    one. Raises :class:`StoreError` naming ``path`` when the file is not a readable store."""
    # the version and the ids from one snapshot of the database
    with _reading(path, "listing admitted environments", transaction=True) as conn:
        if conn is None:
            return None
        version = conn.execute(ADMITTED_SET_VERSION_SQL).fetchone()[0]
        cached = id_snapshot.load(path, version, prefix)
        if cached is not None:
            return cached
        joined = conn.execute(ADMITTED_PREFIXED_SQL, (prefix,)).fetchone()[0]
    gym_ids = joined.split("\n") if joined else []
    names = id_snapshot.names_of(gym_ids, prefix)
    id_snapshot.save(path, version, prefix, gym_ids, names)
    return gym_ids, names


def document_and_source(path: Path, env_id: str) -> tuple[str, str] | None:
    """The stored metadata document (JSON) and code of ``env_id``; ``None`` when the schema
    is not the current one. Raises :class:`~spade_core.errors.EnvNotFound` naming the id."""
    from ..errors import EnvNotFound

    with _reading(path, f"reading {env_id}") as conn:
        if conn is None:
            return None
        row = conn.execute(
            f"SELECT e.document, b.source FROM {ENVS_TABLE} e JOIN {BLOBS_TABLE} b "
            "ON b.code_hash = e.code_hash WHERE e.id = ?",
            (env_id,),
        ).fetchone()
    if row is None:
        raise EnvNotFound(f"no environment {env_id!r} in the store {path}")
    return row[0], row[1]
