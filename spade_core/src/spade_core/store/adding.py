"""Adding environments inside one write transaction: the statements, the checks of an
add's inputs (:func:`prepare_add`), the single item's rules (:func:`add_in`: content-addressed
code, ``(name, version)`` free or the same code, ``new_version``) and a batch's
(:func:`add_batch`). :class:`~spade_core.store.EnvStore` runs them in its transactions."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, func, insert, select, text
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from ..errors import StoreError
from ..metadata import EnvMetadata, code_hash
from ..names import utcnow
from . import codec
from .claims import claim_sqlite, name_lock_key
from .schema import MAX_ID_LENGTH, MAX_VERSION, blobs, envs, parents

# Statements built once: constructing SQLAlchemy statements per call costs more than
# running them on SQLite.
SELECT_NAME_VERSION = select(envs.c.code_hash, envs.c.document).where(
    envs.c.name == bindparam("name"), envs.c.version == bindparam("version")
)
SELECT_NAME_CODE = (
    select(envs.c.id, envs.c.document)
    .where(envs.c.name == bindparam("name"), envs.c.code_hash == bindparam("code_hash"))
    .order_by(envs.c.version)
)
SELECT_MAX_VERSION = select(func.max(envs.c.version)).where(envs.c.name == bindparam("name"))
SELECT_BLOB = select(blobs.c.code_hash).where(blobs.c.code_hash == bindparam("code_hash"))
INSERT_BLOB = insert(blobs)
LOCK_NAME = text("SELECT pg_advisory_xact_lock(:key)")
INSERT_ENV = insert(envs)
INSERT_PARENT = insert(parents)
#: Insert an environment row only when its (name, version) is free (a returned row says so;
#: rowcount is not reliable across drivers here).
INSERT_ENV_IF_NEW = {
    "sqlite": sqlite_insert(envs).on_conflict_do_nothing().returning(envs.c.seq),
    "postgresql": postgresql_insert(envs).on_conflict_do_nothing().returning(envs.c.seq),
}
#: Content addressing in one statement where the dialect has "insert or ignore".
UPSERT_BLOB = {
    "sqlite": sqlite_insert(blobs).on_conflict_do_nothing(index_elements=["code_hash"]),
    "postgresql": postgresql_insert(blobs).on_conflict_do_nothing(index_elements=["code_hash"]),
}


def prepare_add(source: str, metadata: EnvMetadata) -> tuple[str, EnvMetadata, str]:
    """Check the inputs of an add; return the source as stored (line endings
    normalised, as :func:`code_hash` sees it), the metadata with its hash, and its document."""
    if not isinstance(metadata, EnvMetadata):
        raise StoreError(f"add() expects EnvMetadata, got {type(metadata).__name__}")
    if not isinstance(source, str):
        raise StoreError(f"{metadata.id}: source must be str, got {type(source).__name__}")
    if not source.strip():
        raise StoreError(f"{metadata.id}: source is empty")
    if "\x00" in source:
        raise StoreError(f"{metadata.id}: source contains NUL characters (not valid Python source)")
    check_columns(metadata)
    digest = code_hash(source)
    if metadata.code_hash and metadata.code_hash != digest:
        raise StoreError(
            f"{metadata.id}: metadata.code_hash {metadata.code_hash[:12]}... does not match the source "
            f"({digest[:12]}...); leave it empty and the store fills it"
        )
    meta = metadata.model_copy(update={"code_hash": digest})
    normalised = source.replace("\r\n", "\n").replace("\r", "\n")
    return normalised, meta, codec.encode(meta)  # encode fails before the database is touched


def add_batch(
    conn: Connection, batch: Sequence[tuple[str, EnvMetadata, str]], new_version: bool, where: str
) -> list[EnvMetadata]:
    """A batch of prepared adds (:func:`prepare_add`) in one write transaction: the free
    ids inserted together, the others through the single item's rules (:func:`add_in`)."""
    lock_names(conn, [m.name for _, m, _ in batch])
    ids = list({m.id for _, m, _ in batch})
    taken = set(conn.execute(select(envs.c.id).where(envs.c.id.in_(ids))).scalars())
    hashes = list({m.code_hash for _, m, _ in batch})
    stored = set(conn.execute(select(blobs.c.code_hash).where(blobs.c.code_hash.in_(hashes))).scalars())
    fresh: dict[str, tuple[str, EnvMetadata, str]] = {}
    for source, meta, document in batch:
        if meta.id not in taken and meta.id not in fresh:
            check_parents(meta)
            fresh[meta.id] = (source, meta, document)
    now = utcnow().isoformat()
    new_blobs = {}
    for source, meta, _ in fresh.values():
        if meta.code_hash not in stored and meta.code_hash not in new_blobs:
            new_blobs[meta.code_hash] = blob_row(meta.code_hash, source, now)
    if new_blobs:
        conn.execute(INSERT_BLOB, list(new_blobs.values()))
    if fresh:
        conn.execute(INSERT_ENV, [codec.row_values(m, doc) for _, m, doc in fresh.values()])
        edges = [row for _, m, _ in fresh.values() for row in codec.parent_rows(m)]
        if edges:
            conn.execute(INSERT_PARENT, edges)
    out = []
    for source, meta, document in batch:
        if fresh.get(meta.id, (None, None, None))[1] is meta:
            out.append(meta)
        else:  # already stored, or repeated in this batch: the single-item rules decide
            out.append(add_in(conn, source, meta, document, new_version, where))
    return out


def add_in(
    conn: Connection, source: str, meta: EnvMetadata, document: str, new_version: bool, where: str
) -> EnvMetadata:
    """The rules of :meth:`EnvStore.add` inside a write transaction; ``document`` encodes
    ``meta``; ``where`` names the store in errors."""
    prepared = meta
    name = meta.name
    if conn.dialect.name == "sqlite":
        driver = conn.connection.driver_connection
        assert driver is not None  # open inside a transaction
        check_parents(meta)
        if claim_sqlite(driver, source, meta, document):
            return meta
        claim = None  # taken: the full rules below decide
    else:
        lock_names(conn, [name])
        claim = INSERT_ENV_IF_NEW.get(conn.dialect.name)
    if claim is not None:
        # Common case first: the (name, version) is free. Claiming it in one statement
        # saves a lookup; a conflict falls through to the full rules below (and a refusal
        # there rolls back the code stored here).
        check_parents(meta)
        store_code(conn, meta.code_hash, source)
        if conn.execute(claim, codec.row_values(meta, document)).first() is not None:
            store_edges(conn, meta)
            return meta
    row = conn.execute(SELECT_NAME_VERSION, {"name": name, "version": meta.version}).first()
    if row is not None:
        if row.code_hash == meta.code_hash:
            return codec.decode(row.document, env_id=meta.id, where=where)
        if not new_version:
            raise StoreError(
                f"{where}: {meta.id} already exists with different code "
                f"(stored {row.code_hash[:12]}..., new {meta.code_hash[:12]}...); "
                f"pass new_version=True to store it as the next version of {name!r}"
            )
        same = conn.execute(SELECT_NAME_CODE, {"name": name, "code_hash": meta.code_hash}).first()
        if same is not None:  # this code already is a version of this name
            return codec.decode(same.document, env_id=same.id, where=where)
        top = conn.execute(SELECT_MAX_VERSION, {"name": name}).scalar_one()
        version = int(top) + 1
        meta = meta.model_copy(update={"version": version, "id": f"{name}-v{version}"})
        check_columns(meta)
    check_parents(meta)
    store_code(conn, meta.code_hash, source)
    conn.execute(INSERT_ENV, codec.row_values(meta, document if meta is prepared else codec.encode(meta)))
    store_edges(conn, meta)
    return meta


def store_code(conn: Connection, digest: str, source: str) -> None:
    blob = blob_row(digest, source, utcnow().isoformat())
    upsert = UPSERT_BLOB.get(conn.dialect.name)
    if upsert is not None:
        conn.execute(upsert, blob)
    elif conn.execute(SELECT_BLOB, {"code_hash": digest}).first() is None:
        conn.execute(INSERT_BLOB, blob)


def store_edges(conn: Connection, meta: EnvMetadata) -> None:
    edges = codec.parent_rows(meta)
    if edges:
        conn.execute(INSERT_PARENT, edges)


def lock_names(conn: Connection, names: Iterable[str]) -> None:
    """Serialise writers of the same names until the transaction ends (PostgreSQL).

    Under READ COMMITTED each statement sees newly committed rows, so without this two
    writers could both miss each other's "same code under this name" and then store it
    twice as consecutive versions. SQLite needs nothing: BEGIN IMMEDIATE already admits
    one writer at a time. Sorted keys: no two writers wait on each other in a cycle.
    """
    if conn.dialect.name != "postgresql":
        return
    keys = sorted({name_lock_key(n) for n in names})
    for key in keys:
        conn.execute(LOCK_NAME, {"key": key})


def check_columns(meta: EnvMetadata) -> None:
    """What every backend can index: no NUL in indexed text, parent ids that fit their column,
    a version every backend's integer column holds."""
    if meta.version > MAX_VERSION:
        raise StoreError(f"{meta.id}: version {meta.version} is above the largest a store holds ({MAX_VERSION})")
    for field_name in ("domain", "skill"):
        if "\x00" in getattr(meta, field_name):
            raise StoreError(f"{meta.id}: {field_name} contains a NUL character")
    for parent in meta.parent_ids:
        if "\x00" in parent or not 0 < len(parent) <= MAX_ID_LENGTH:
            raise StoreError(f"{meta.id}: parent id {parent[:40]!r} must be 1-{MAX_ID_LENGTH} characters without NUL")


def check_parents(meta: EnvMetadata) -> None:
    if meta.id in meta.parent_ids:
        raise StoreError(f"{meta.id}: an environment cannot be its own parent")


def blob_row(digest: str, source: str, now: str) -> dict[str, Any]:
    return {"code_hash": digest, "source": source, "size": len(source.encode("utf-8")), "created_at": now}
