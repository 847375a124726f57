"""Names of the store's tables and columns, shared by the SQLAlchemy schema and the
registry's read-only fast path (which reads admitted ids with the stdlib ``sqlite3``).

This module imports nothing heavy on purpose: ``import spade_core`` reads it.
"""

from __future__ import annotations

#: Version of the store's *database schema* (tables), not of the metadata model.
#: Bump it together with a new function in :mod:`spade_core.store.migrations`.
STORE_SCHEMA_VERSION = 4

SCHEMA_TABLE = "spade_schema"
BLOBS_TABLE = "code_blobs"
ENVS_TABLE = "envs"
PARENTS_TABLE = "env_parents"
#: One row whose ``version`` changes (to a fresh random value) in every transaction that
#: changes the set of admitted ids; SQLite triggers on ``envs`` maintain it (schema 4).
ADMITTED_SET_TABLE = "spade_admitted_set"

#: Every table this package creates; a database holding some of them but no
#: :data:`SCHEMA_TABLE` is not a SPADE store we can trust.
OWN_TABLES = (SCHEMA_TABLE, BLOBS_TABLE, ENVS_TABLE, PARENTS_TABLE, ADMITTED_SET_TABLE)

#: The query the registry runs on import (SQLite fast path) and that
#: :meth:`EnvStore.admitted_ids` runs through SQLAlchemy: keep them the same.
ADMITTED_IDS_SQL = f"SELECT id FROM {ENVS_TABLE} WHERE status = 'admitted' ORDER BY seq"
SCHEMA_VERSION_SQL = f"SELECT MAX(version) FROM {SCHEMA_TABLE}"
#: The registry's bulk read: every admitted id with a prefix, as one newline-joined string
#: (ids cannot contain newlines), in no particular order, answered from the (status, id) index.
ADMITTED_PREFIXED_SQL = f"SELECT group_concat(? || id, char(10)) FROM {ENVS_TABLE} WHERE status = 'admitted'"
#: The admitted set's version (see :data:`ADMITTED_SET_TABLE`): the registry's snapshot of
#: admitted ids is current while this value is the one it was taken at.
ADMITTED_SET_VERSION_SQL = f"SELECT version FROM {ADMITTED_SET_TABLE}"
