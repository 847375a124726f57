"""The common case of :meth:`EnvStore.add <spade_core.store.EnvStore.add>` at the driver
level: store the code and claim a free ``(name, version)``, or report that it is taken.

SQLAlchemy's per-statement work (compiling parameters, result objects, events) costs
more than the database spends on these few inserts, and it was what kept one writer
under 1,000 adds/s. So the free-id case runs as plain SQL on the driver connection of a
pooled connection, and a taken id (idempotent re-add, refusal of other code,
``new_version``) leaves nothing written and takes the full rules in
:func:`spade_core.store.adding.add_in`. The statements do what the
Core ones there do, row for row.

* SQLite: three plain statements inside the ``BEGIN IMMEDIATE`` transaction that
  :meth:`Database.write_sqlite <spade_core.store.database.Database.write_sqlite>` opens.
* PostgreSQL: one statement, sent in autocommit mode by
  :meth:`Database.write_statement <spade_core.store.database.Database.write_statement>`,
  so the statement is the whole transaction and one round trip: take the name's advisory
  lock (the key :func:`name_lock_key` gives, as the full rules take it), claim the
  ``envs`` row ``ON CONFLICT DO NOTHING``, and only from a claimed row insert the code
  (``ON CONFLICT DO NOTHING``) and the parent edges. Foreign keys are checked at the end of
  the statement, so the row may precede its code; and a taken id writes no code at all.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

from ..metadata import EnvMetadata
from . import codec
from .layout import BLOBS_TABLE, ENVS_TABLE, PARENTS_TABLE

SQLITE_UPSERT_BLOB = (
    f"INSERT INTO {BLOBS_TABLE} (code_hash, source, size, created_at) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (code_hash) DO NOTHING"
)
SQLITE_CLAIM_ENV = (
    f"INSERT INTO {ENVS_TABLE} ({', '.join(codec.ENV_COLUMNS)}) VALUES ({', '.join('?' * len(codec.ENV_COLUMNS))}) "
    "ON CONFLICT DO NOTHING RETURNING seq"
)
SQLITE_INSERT_PARENT = f"INSERT INTO {PARENTS_TABLE} (child_id, position, parent_id) VALUES (?, ?, ?)"

# Every parameter is cast: the driver sends Python ints as the smallest integer type that
# holds them, and a server-side prepared statement is kept per parameter-type signature.
_PG_ENV_VALUES = (
    "%s::varchar, %s::varchar, %s::integer, %s::varchar, %s::varchar, %s::varchar, %s::char(64), "
    "%s::varchar, %s::varchar, %s::text"
)
POSTGRES_CLAIM = f"""
WITH name_lock AS (SELECT pg_advisory_xact_lock(%s::bigint)),
claim AS (
    INSERT INTO {ENVS_TABLE} ({', '.join(codec.ENV_COLUMNS)})
    SELECT {_PG_ENV_VALUES} FROM name_lock
    ON CONFLICT DO NOTHING
    RETURNING id, code_hash
),
code AS (
    INSERT INTO {BLOBS_TABLE} (code_hash, source, size, created_at)
    SELECT claim.code_hash, %s::text, %s::integer, %s::varchar FROM claim
    ON CONFLICT (code_hash) DO NOTHING
),
edges AS (
    INSERT INTO {PARENTS_TABLE} (child_id, position, parent_id)
    SELECT claim.id, edge.position - 1, edge.parent_id
    FROM claim, unnest(%s::varchar[]) WITH ORDINALITY AS edge(parent_id, position)
)
SELECT count(*) FROM claim
"""


def name_lock_key(name: str) -> int:
    """The PostgreSQL advisory-lock key that serialises writers of ``name`` (a signed 64-bit
    integer; every path that takes a name's lock must derive it here)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def _now() -> str:
    return datetime.now(UTC).isoformat()


def claim_sqlite(driver: Any, source: str, meta: EnvMetadata, document: str) -> bool:
    """Store the code and claim ``meta``'s (name, version) on a SQLite driver connection
    inside a write transaction; ``False`` (nothing of the row written) when the id is taken.
    The caller rolls back on ``False``, which also drops the code stored here."""
    size = len(source.encode("utf-8"))
    driver.execute(SQLITE_UPSERT_BLOB, (meta.code_hash, source, size, _now()))
    if not driver.execute(SQLITE_CLAIM_ENV, codec.row_tuple(meta, document)).fetchall():
        return False
    if meta.parent_ids:
        driver.executemany(SQLITE_INSERT_PARENT, [(meta.id, i, p) for i, p in enumerate(meta.parent_ids)])
    return True


def postgres_claim_params(source: str, meta: EnvMetadata, document: str) -> tuple[Any, ...]:
    """The parameters of :data:`POSTGRES_CLAIM` for one add."""
    return (
        name_lock_key(meta.name),
        *codec.row_tuple(meta, document),
        source,
        len(source.encode("utf-8")),
        _now(),
        list(meta.parent_ids),
    )


def claim_postgres(driver: Any, source: str, meta: EnvMetadata, document: str) -> bool:
    """Run :data:`POSTGRES_CLAIM` on a psycopg connection in autocommit mode (the statement
    is its own transaction); ``True`` when the row, its code and its edges were committed,
    ``False`` when the id was taken (then nothing was written)."""
    with driver.cursor() as cursor:
        cursor.execute(POSTGRES_CLAIM, postgres_claim_params(source, meta, document))
        row = cursor.fetchone()
    return bool(row[0])
