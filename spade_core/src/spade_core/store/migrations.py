"""Schema migrations of the store: ordered functions, one per schema version.

``MIGRATIONS[n - 1]`` takes a database at version ``n - 1`` to version ``n`` inside the
caller's write transaction; :func:`migrate` applies the missing ones in order and records
each in the schema table. A migration only ever adds to or reshapes what earlier ones
built, so a store written by any older SPADE opens (and is upgraded) here, while a store
from a newer SPADE is refused with a clear error instead of being misread.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, insert, inspect, select, text

from ..errors import StoreError
from . import schema
from .layout import ADMITTED_SET_TABLE, ENVS_TABLE, OWN_TABLES, SCHEMA_TABLE, STORE_SCHEMA_VERSION


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    apply: Callable[[Connection], None]


def _ddl(conn: Connection, statement: str) -> None:
    # Plain DDL, not sqlalchemy.Index objects: those attach themselves to the shared Table
    # objects, and a later create_all would then create them a second time.
    conn.execute(text(statement))


def _v1_base_tables(conn: Connection) -> None:
    schema.metadata_obj.create_all(conn, tables=[schema.schema_table, schema.blobs, schema.envs])
    _ddl(conn, "CREATE INDEX ix_envs_status ON envs (status)")
    _ddl(conn, "CREATE INDEX ix_envs_domain_skill ON envs (domain, skill)")
    _ddl(conn, "CREATE INDEX ix_envs_code_hash ON envs (code_hash)")


def _v2_lineage_edges(conn: Connection) -> None:
    """Lineage as an indexed edge table, backfilled from each document's ``parent_ids``."""
    schema.metadata_obj.create_all(conn, tables=[schema.parents])
    _ddl(conn, "CREATE INDEX ix_env_parents_parent ON env_parents (parent_id)")
    edges = []
    for env_id, document in conn.execute(select(schema.envs.c.id, schema.envs.c.document)):
        for position, parent in enumerate(json.loads(document).get("parent_ids") or []):
            edges.append({"child_id": env_id, "position": position, "parent_id": parent})
    if edges:
        conn.execute(insert(schema.parents), edges)


def _v3_covering_status_index(conn: Connection) -> None:
    """Registration reads every admitted id at import; (status, id) answers that from the
    index alone. It also serves every status filter, so the old one-column index goes."""
    _ddl(conn, "DROP INDEX ix_envs_status")
    _ddl(conn, "CREATE INDEX ix_envs_status_id ON envs (status, id)")


def _v4_admitted_set_version(conn: Connection) -> None:
    """A version of the set of admitted ids, so that ``import spade_core`` can reuse a
    snapshot of 100,000 ids instead of reading them again (see
    :mod:`spade_core.store.id_snapshot`). On SQLite, triggers give it a fresh random value
    inside every transaction that admits, un-admits, renames or deletes an admitted row:
    random rather than a counter, so that two copies of a store that diverged never share
    a version. Other databases get the table but no triggers (the snapshot is only used
    for SQLite files)."""
    _ddl(conn, f"CREATE TABLE {ADMITTED_SET_TABLE} (one INTEGER PRIMARY KEY CHECK (one = 1), version VARCHAR(64) NOT NULL)")
    conn.execute(text(f"INSERT INTO {ADMITTED_SET_TABLE} (one, version) VALUES (1, :v)"), {"v": secrets.token_hex(16)})
    if conn.dialect.name != "sqlite":
        return
    bump = f"UPDATE {ADMITTED_SET_TABLE} SET version = lower(hex(randomblob(16)))"
    _ddl(conn, f"CREATE TRIGGER tr_admitted_insert AFTER INSERT ON {ENVS_TABLE} "
               f"WHEN NEW.status = 'admitted' BEGIN {bump}; END")
    _ddl(conn, f"CREATE TRIGGER tr_admitted_update AFTER UPDATE OF status, id ON {ENVS_TABLE} "
               "WHEN (OLD.status = 'admitted' OR NEW.status = 'admitted') "
               f"AND (OLD.status IS NOT NEW.status OR OLD.id IS NOT NEW.id) BEGIN {bump}; END")
    _ddl(conn, f"CREATE TRIGGER tr_admitted_delete AFTER DELETE ON {ENVS_TABLE} "
               f"WHEN OLD.status = 'admitted' BEGIN {bump}; END")


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "code blobs and environment versions", _v1_base_tables),
    Migration(2, "lineage edge table", _v2_lineage_edges),
    Migration(3, "covering (status, id) index for registration", _v3_covering_status_index),
    Migration(4, "version of the admitted set, for the registry's id snapshot", _v4_admitted_set_version),
)
assert len(MIGRATIONS) == STORE_SCHEMA_VERSION and all(m.version == i + 1 for i, m in enumerate(MIGRATIONS))


def current_version(conn: Connection, *, where: str) -> int:
    """Schema version of the database behind ``conn``; 0 for an empty database.

    Raises :class:`StoreError` when the database holds some of the store's tables but no
    schema table (a damaged or foreign database we must not write into).
    """
    tables = set(inspect(conn).get_table_names())
    if SCHEMA_TABLE not in tables:
        ours = sorted(tables & set(OWN_TABLES))
        if ours:
            raise StoreError(
                f"{where}: has store tables ({', '.join(ours)}) but no {SCHEMA_TABLE} table; "
                "it is damaged or was not written by SPADE"
            )
        return 0
    version = conn.execute(select(schema.schema_table.c.version).order_by(schema.schema_table.c.version.desc())).first()
    return int(version[0]) if version else 0


def check_supported(version: int, *, where: str) -> None:
    if version > STORE_SCHEMA_VERSION:
        raise StoreError(
            f"{where}: store schema version {version} is newer than this spade-core supports "
            f"(up to {STORE_SCHEMA_VERSION}); upgrade spade-core to open it"
        )


def migrate(conn: Connection, *, where: str, target: int = STORE_SCHEMA_VERSION) -> list[int]:
    """Bring the database to ``target`` inside the current transaction; return applied versions."""
    version = current_version(conn, where=where)
    check_supported(version, where=where)
    applied = []
    for migration in MIGRATIONS[version:target]:
        migration.apply(conn)
        conn.execute(
            insert(schema.schema_table).values(
                version=migration.version,
                description=migration.description,
                applied_at=datetime.now(UTC).isoformat(),
            )
        )
        applied.append(migration.version)
    return applied
