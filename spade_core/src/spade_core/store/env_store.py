"""The environment store: content-addressed code, versions per name, lineage, stats and
lifecycle of every environment SPADE knows, behind any SQLAlchemy URL.

Contracts:

* Code is stored once per :func:`~spade_core.metadata.code_hash`, with line endings
  normalised to ``\n`` (the form the hash is computed on); metadata rows point at it.
* ``(name, version)`` is unique. Adding it again with the same code returns the stored
  record (idempotent); with other code it is refused unless ``new_version=True``, which
  stores the code as ``max(version) + 1`` of that name.
* Every write is one transaction: a writer killed mid-way leaves the store as it was
  before that transaction. Concurrent writers (threads or processes) are serialised by
  the database; lock timeouts and lost races are retried.
* Every failure of the database surfaces as :class:`~spade_core.errors.StoreError` (or
  :class:`~spade_core.errors.EnvNotFound`, :class:`~spade_core.errors.InvalidTransition`)
  whose message names the store file or URL.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from sqlalchemy import Connection, Select, bindparam, func, insert, select, text, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from ..errors import EnvNotFound, InvalidTransition, StoreError
from ..metadata import TRANSITIONS, EnvMetadata, EnvStatus, StatsSnapshot, ValidationReport, code_hash
from . import codec, migrations
from .claims import claim_postgres, claim_sqlite, name_lock_key
from .database import Database, open_database
from .layout import ADMITTED_IDS_SQL, STORE_SCHEMA_VERSION
from .schema import MAX_ID_LENGTH, MAX_VERSION, blobs, envs, parents

if TYPE_CHECKING:
    from ..config import SpadeConfig

_HASH_RE = re.compile(r"[0-9a-f]{64}")

# Statements built once: constructing SQLAlchemy statements per call costs more than
# running them on SQLite.
_SELECT_NAME_VERSION = select(envs.c.code_hash, envs.c.document).where(
    envs.c.name == bindparam("name"), envs.c.version == bindparam("version")
)
_SELECT_NAME_CODE = (
    select(envs.c.id, envs.c.document)
    .where(envs.c.name == bindparam("name"), envs.c.code_hash == bindparam("code_hash"))
    .order_by(envs.c.version)
)
_SELECT_MAX_VERSION = select(func.max(envs.c.version)).where(envs.c.name == bindparam("name"))
_SELECT_BLOB = select(blobs.c.code_hash).where(blobs.c.code_hash == bindparam("code_hash"))
_SELECT_DOCUMENT = select(envs.c.document).where(envs.c.id == bindparam("id"))
_SELECT_DOCUMENT_FOR_UPDATE = _SELECT_DOCUMENT.with_for_update()
_SELECT_SEQ = select(envs.c.seq).where(envs.c.id == bindparam("id"))
_INSERT_BLOB = insert(blobs)
_LOCK_NAME = text("SELECT pg_advisory_xact_lock(:key)")
_INSERT_ENV = insert(envs)
_INSERT_PARENT = insert(parents)
#: Insert an environment row only when its (name, version) is free (a returned row says so;
#: rowcount is not reliable across drivers here).
_INSERT_ENV_IF_NEW = {
    "sqlite": sqlite_insert(envs).on_conflict_do_nothing().returning(envs.c.seq),
    "postgresql": postgresql_insert(envs).on_conflict_do_nothing().returning(envs.c.seq),
}
#: Content addressing in one statement where the dialect has "insert or ignore".
_UPSERT_BLOB = {
    "sqlite": sqlite_insert(blobs).on_conflict_do_nothing(index_elements=["code_hash"]),
    "postgresql": postgresql_insert(blobs).on_conflict_do_nothing(index_elements=["code_hash"]),
}
#: Rows per transaction in :meth:`EnvStore.add_many`.
DEFAULT_BATCH = 500


def _now() -> datetime:
    return datetime.now(UTC)


class EnvStore:
    """A handle on one store. Thread-safe; open one per process (it holds a pool)."""

    #: ``add()`` of a free id takes the driver-level claim (:mod:`.claims`); ``False``
    #: sends every add through the full rules (the tests compare the two).
    _driver_claims = True

    def __init__(self, url: str, *, create: bool = True) -> None:
        self._db: Database = open_database(url, create=create)
        self._closed = False
        try:
            self._prepare(create)
        except BaseException:
            self._db.dispose()
            raise

    @classmethod
    def open(cls, config: SpadeConfig, *, create: bool = True) -> EnvStore:
        """The store ``config`` names: ``config.resolved_store_url`` (default
        ``SPADE_HOME/store.db``). The configuration is the caller's, loaded once at the edge
        (CLI, ``spade selfplay``): the store never reads ``spade.toml`` by itself."""
        return cls(config.resolved_store_url, create=create)

    # --- lifecycle -----------------------------------------------------------------

    @property
    def url(self) -> str:
        return self._db.url.render_as_string(hide_password=False)

    @property
    def where(self) -> str:
        """The store as error messages name it: a file path or a password-free URL."""
        return self._db.where

    @property
    def path(self) -> Path | None:
        """The SQLite file, or ``None`` for other databases."""
        return self._db.sqlite_path

    def schema_version(self) -> int:
        with self._reading("reading the schema version") as conn:
            return migrations.current_version(conn, where=self.where)

    def _prepare(self, create: bool) -> None:
        version = self._db.read("opening the store", lambda conn: migrations.current_version(conn, where=self.where))
        migrations.check_supported(version, where=self.where)
        if version == STORE_SCHEMA_VERSION:
            return
        if version == 0 and not create:
            raise StoreError(f"{self.where}: is not a SPADE store (no tables; opened with create=False)")

        def work(conn: Connection) -> list[int]:
            if conn.dialect.name == "postgresql":  # one migrator at a time across processes
                conn.execute(text("SELECT pg_advisory_xact_lock(715371)"))
            return migrations.migrate(conn, where=self.where)

        self._db.write("migrating the store schema", work)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._db.dispose()

    def __enter__(self) -> EnvStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"EnvStore({self.where!r}{', closed' if self._closed else ''})"

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"{self.where}: the store is closed")

    def _reading(self, action: str) -> Any:
        self._check_open()
        return self._db.reading(action)

    def _write_sqlite(self, action: str, work: Callable[[Any], Any]) -> Any:
        self._check_open()
        return self._db.write_sqlite(action, work)

    def _write_statement(self, action: str, work: Callable[[Any], Any]) -> Any:
        self._check_open()
        return self._db.write_statement(action, work)

    def _write(self, action: str, work: Callable[[Connection], Any]) -> Any:
        self._check_open()
        return self._db.write(action, work)

    # --- adding --------------------------------------------------------------------

    def add(self, source: str, metadata: EnvMetadata, *, new_version: bool = False) -> EnvMetadata:
        """Store ``source`` with ``metadata``; return the stored record (code hash filled).

        Raises :class:`StoreError` when ``(name, version)`` exists with different code and
        ``new_version`` is false, when ``metadata.code_hash`` is set but does not match the
        source, or when the metadata cannot be stored faithfully.
        """
        source, meta, document = self._prepared(source, metadata)
        action = f"adding {meta.id}"
        # The common case (a free name and version) at the driver level (see .claims); an
        # existing id (idempotent add, refusal, new_version) writes nothing there and
        # takes the full rules.
        if not self._driver_claims:
            pass
        elif self._db.is_sqlite:
            _check_parents(meta)

            def claim(driver: Any) -> None:
                if not claim_sqlite(driver, source, meta, document):
                    raise _Taken  # rolls back the code stored by the claim

            try:
                self._write_sqlite(action, claim)
                return meta
            except _Taken:
                pass
        elif self._db.is_psycopg:  # other PostgreSQL drivers take the full rules
            _check_parents(meta)
            if self._write_statement(action, lambda driver: claim_postgres(driver, source, meta, document)):
                return meta
        return self._write(action, lambda conn: self._add_in(conn, source, meta, document, new_version))

    def add_many(
        self,
        items: Iterable[tuple[str, EnvMetadata]],
        *,
        new_version: bool = False,
        batch_size: int = DEFAULT_BATCH,
    ) -> list[EnvMetadata]:
        """:meth:`add` for many environments, ``batch_size`` per transaction (bulk import).

        Same rules as :meth:`add` per item; results come back in input order. A failing
        item aborts its whole batch (earlier batches stay committed).
        """
        if batch_size < 1:
            raise StoreError(f"batch_size must be >= 1, got {batch_size}")
        out: list[EnvMetadata] = []
        batch: list[tuple[str, EnvMetadata, str]] = []
        for source, metadata in items:
            batch.append(self._prepared(source, metadata))
            if len(batch) >= batch_size:
                out.extend(self._add_batch(batch, new_version))
                batch = []
        if batch:
            out.extend(self._add_batch(batch, new_version))
        return out

    def _prepared(self, source: str, metadata: EnvMetadata) -> tuple[str, EnvMetadata, str]:
        """Check the inputs of an add; return the source as stored (line endings
        normalised, as :func:`code_hash` sees it), the metadata with its hash, and its document."""
        self._check_open()
        if not isinstance(metadata, EnvMetadata):
            raise StoreError(f"add() expects EnvMetadata, got {type(metadata).__name__}")
        if not isinstance(source, str):
            raise StoreError(f"{metadata.id}: source must be str, got {type(source).__name__}")
        if not source.strip():
            raise StoreError(f"{metadata.id}: source is empty")
        if "\x00" in source:
            raise StoreError(f"{metadata.id}: source contains NUL characters (not valid Python source)")
        _check_columns(metadata)
        digest = code_hash(source)
        if metadata.code_hash and metadata.code_hash != digest:
            raise StoreError(
                f"{metadata.id}: metadata.code_hash {metadata.code_hash[:12]}... does not match the source "
                f"({digest[:12]}...); leave it empty and the store fills it"
            )
        meta = metadata.model_copy(update={"code_hash": digest})
        normalised = source.replace("\r\n", "\n").replace("\r", "\n")
        return normalised, meta, codec.encode(meta)  # encode fails before the database is touched

    def _add_batch(self, batch: Sequence[tuple[str, EnvMetadata, str]], new_version: bool) -> list[EnvMetadata]:
        def work(conn: Connection) -> list[EnvMetadata]:
            _lock_names(conn, [m.name for _, m, _ in batch])
            ids = list({m.id for _, m, _ in batch})
            taken = set(conn.execute(select(envs.c.id).where(envs.c.id.in_(ids))).scalars())
            hashes = list({m.code_hash for _, m, _ in batch})
            stored = set(conn.execute(select(blobs.c.code_hash).where(blobs.c.code_hash.in_(hashes))).scalars())
            fresh: dict[str, tuple[str, EnvMetadata, str]] = {}
            for source, meta, document in batch:
                if meta.id not in taken and meta.id not in fresh:
                    _check_parents(meta)
                    fresh[meta.id] = (source, meta, document)
            now = _now().isoformat()
            new_blobs = {}
            for source, meta, _ in fresh.values():
                if meta.code_hash not in stored and meta.code_hash not in new_blobs:
                    new_blobs[meta.code_hash] = _blob_row(meta.code_hash, source, now)
            if new_blobs:
                conn.execute(_INSERT_BLOB, list(new_blobs.values()))
            if fresh:
                conn.execute(_INSERT_ENV, [codec.row_values(m, doc) for _, m, doc in fresh.values()])
                edges = [row for _, m, _ in fresh.values() for row in codec.parent_rows(m)]
                if edges:
                    conn.execute(_INSERT_PARENT, edges)
            out = []
            for source, meta, document in batch:
                if fresh.get(meta.id, (None, None, None))[1] is meta:
                    out.append(meta)
                else:  # already stored, or repeated in this batch: the single-item rules decide
                    out.append(self._add_in(conn, source, meta, document, new_version))
            return out

        return self._write(f"adding {len(batch)} environments", work)

    def _add_in(
        self, conn: Connection, source: str, meta: EnvMetadata, document: str, new_version: bool
    ) -> EnvMetadata:
        """The rules of :meth:`add` inside a write transaction; ``document`` encodes ``meta``."""
        prepared = meta
        name = meta.name
        if conn.dialect.name == "sqlite":
            driver = conn.connection.driver_connection
            assert driver is not None  # open inside a transaction
            _check_parents(meta)
            if claim_sqlite(driver, source, meta, document):
                return meta
            claim = None  # taken: the full rules below decide
        else:
            _lock_names(conn, [name])
            claim = _INSERT_ENV_IF_NEW.get(conn.dialect.name)
        if claim is not None:
            # Common case first: the (name, version) is free. Claiming it in one statement
            # saves a lookup; a conflict falls through to the full rules below (and a refusal
            # there rolls back the code stored here).
            _check_parents(meta)
            self._store_code(conn, meta.code_hash, source)
            if conn.execute(claim, codec.row_values(meta, document)).first() is not None:
                self._store_edges(conn, meta)
                return meta
        row = conn.execute(_SELECT_NAME_VERSION, {"name": name, "version": meta.version}).first()
        if row is not None:
            if row.code_hash == meta.code_hash:
                return codec.decode(row.document, env_id=meta.id, where=self.where)
            if not new_version:
                raise StoreError(
                    f"{self.where}: {meta.id} already exists with different code "
                    f"(stored {row.code_hash[:12]}..., new {meta.code_hash[:12]}...); "
                    f"pass new_version=True to store it as the next version of {name!r}"
                )
            same = conn.execute(_SELECT_NAME_CODE, {"name": name, "code_hash": meta.code_hash}).first()
            if same is not None:  # this code already is a version of this name
                return codec.decode(same.document, env_id=same.id, where=self.where)
            top = conn.execute(_SELECT_MAX_VERSION, {"name": name}).scalar_one()
            version = int(top) + 1
            meta = meta.model_copy(update={"version": version, "id": f"{name}-v{version}"})
            _check_columns(meta)
        _check_parents(meta)
        self._store_code(conn, meta.code_hash, source)
        conn.execute(_INSERT_ENV, codec.row_values(meta, document if meta is prepared else codec.encode(meta)))
        self._store_edges(conn, meta)
        return meta

    @staticmethod
    def _store_code(conn: Connection, digest: str, source: str) -> None:
        blob = _blob_row(digest, source, _now().isoformat())
        upsert = _UPSERT_BLOB.get(conn.dialect.name)
        if upsert is not None:
            conn.execute(upsert, blob)
        elif conn.execute(_SELECT_BLOB, {"code_hash": digest}).first() is None:
            conn.execute(_INSERT_BLOB, blob)

    @staticmethod
    def _store_edges(conn: Connection, meta: EnvMetadata) -> None:
        edges = codec.parent_rows(meta)
        if edges:
            conn.execute(_INSERT_PARENT, edges)

    # --- reading -------------------------------------------------------------------

    def get(self, env_id: str) -> EnvMetadata:
        """The metadata of ``env_id`` (``<name>-v<N>``); :class:`EnvNotFound` names the id."""
        with self._reading(f"reading {env_id}") as conn:
            document = conn.execute(_SELECT_DOCUMENT, {"id": env_id}).scalar()
        if document is None:
            raise EnvNotFound(f"no environment {env_id!r} in the store {self.where}")
        return codec.decode(document, env_id=env_id, where=self.where)

    def resolve(self, ref: str) -> EnvMetadata:
        """Look up an id, a Gymnasium id (``spade/<id>``) or a bare name (its latest version)."""
        ref = ref.removeprefix("spade/")
        with self._reading(f"reading {ref}") as conn:
            row = conn.execute(select(envs.c.id, envs.c.document).where(envs.c.id == ref)).first()
            if row is None:
                row = conn.execute(
                    select(envs.c.id, envs.c.document).where(envs.c.name == ref).order_by(envs.c.version.desc())
                ).first()
        if row is None:
            raise EnvNotFound(f"no environment with id or name {ref!r} in the store {self.where}")
        return codec.decode(row.document, env_id=row.id, where=self.where)

    def get_source(self, env_id_or_hash: str) -> str:
        """The code of an environment id, or of a code hash."""
        key = env_id_or_hash
        with self._reading(f"reading the code of {key}") as conn:
            if _HASH_RE.fullmatch(key):
                source = conn.execute(select(blobs.c.source).where(blobs.c.code_hash == key)).scalar()
            else:
                source = conn.execute(
                    select(blobs.c.source).join(envs, envs.c.code_hash == blobs.c.code_hash).where(envs.c.id == key)
                ).scalar()
        if source is None:
            kind = "code hash" if _HASH_RE.fullmatch(key) else "environment"
            raise EnvNotFound(f"no {kind} {key!r} in the store {self.where}")
        return str(source)

    def find(
        self,
        *,
        domain: str | None = None,
        skill: str | None = None,
        status: EnvStatus | str | None = None,
        name: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        after: str | None = None,
    ) -> list[EnvMetadata]:
        """Environments matching every given filter, in insertion order.

        ``after`` (an environment's id) starts past that environment in insertion order,
        whether or not it matches the filters: keyset paging, ``after=`` the last id of
        the previous page. Unlike ``offset`` it neither repeats nor skips an environment
        when others change status between two pages, and a late page costs what the first
        does. :class:`EnvNotFound` when no environment has that id."""
        if limit is not None and limit < 0:
            raise StoreError(f"limit must be >= 0, got {limit}")
        if offset < 0:
            raise StoreError(f"offset must be >= 0, got {offset}")
        query = _filtered(select(envs.c.id, envs.c.document), domain, skill, status, name).order_by(envs.c.seq)
        if after is not None:
            query = query.where(envs.c.seq > bindparam("after_seq"))
        if limit is not None:
            query = query.limit(limit)
        if offset:
            query = query.offset(offset)
        with self._reading("searching environments") as conn:
            params: dict[str, Any] = {}
            if after is not None:
                params["after_seq"] = conn.execute(_SELECT_SEQ, {"id": after}).scalar()
                if params["after_seq"] is None:
                    raise EnvNotFound(f"no environment {after!r} in the store {self.where} (find's after= takes a stored id)")
            rows = conn.execute(query, params).all()
        return [codec.decode(r.document, env_id=r.id, where=self.where) for r in rows]

    def count(
        self,
        *,
        domain: str | None = None,
        skill: str | None = None,
        status: EnvStatus | str | None = None,
        name: str | None = None,
    ) -> int:
        query = _filtered(select(func.count()).select_from(envs), domain, skill, status, name)
        with self._reading("counting environments") as conn:
            return int(conn.execute(query).scalar_one())

    def versions(self, name: str) -> list[EnvMetadata]:
        """Every stored version of ``name``, oldest first (empty when the name is unknown)."""
        with self._reading(f"listing versions of {name}") as conn:
            rows = conn.execute(
                select(envs.c.id, envs.c.document).where(envs.c.name == name).order_by(envs.c.version)
            ).all()
        return [codec.decode(r.document, env_id=r.id, where=self.where) for r in rows]

    def lineage(self, env_id: str) -> list[EnvMetadata]:
        """Ancestors of ``env_id``, nearest first (breadth-first over ``parent_ids``).

        Parents that are not in this store (e.g. from an imported pool) are skipped.
        """
        self.get(env_id)
        return self._walk(env_id, up=True)

    def descendants(self, env_id: str) -> list[EnvMetadata]:
        """Environments derived from ``env_id`` directly or indirectly, nearest first."""
        self.get(env_id)
        return self._walk(env_id, up=False)

    def _walk(self, start: str, *, up: bool) -> list[EnvMetadata]:
        seen = {start}
        order: list[str] = []
        frontier = [start]
        with self._reading(f"walking the lineage of {start}") as conn:
            while frontier:
                if up:
                    edges = conn.execute(
                        select(parents.c.child_id, parents.c.parent_id)
                        .where(parents.c.child_id.in_(frontier))
                        .order_by(parents.c.position)
                    ).all()
                    rank = {c: i for i, c in enumerate(frontier)}
                    edges.sort(key=lambda e: rank[e.child_id])  # stable: keeps position order
                    step = [e.parent_id for e in edges]
                else:
                    step = list(
                        conn.execute(
                            select(envs.c.id)
                            .join(parents, parents.c.child_id == envs.c.id)
                            .where(parents.c.parent_id.in_(frontier))
                            .order_by(envs.c.seq)
                        ).scalars()
                    )
                frontier = []
                for env_id in step:
                    if env_id not in seen:
                        seen.add(env_id)
                        frontier.append(env_id)
                order.extend(frontier)
            docs = dict(conn.execute(select(envs.c.id, envs.c.document).where(envs.c.id.in_(order))).all()) if order else {}
        return [codec.decode(docs[i], env_id=i, where=self.where) for i in order if i in docs]

    def admitted_ids(self) -> list[str]:
        """Ids of admitted environments in insertion order (what the registry registers)."""
        with self._reading("listing admitted environments") as conn:
            return list(conn.execute(text(ADMITTED_IDS_SQL)).scalars())

    # --- updating ------------------------------------------------------------------

    def record_stats(self, env_id: str, stats: StatsSnapshot) -> EnvMetadata:
        """Record play statistics at one policy snapshot (replacing that snapshot's earlier
        entry; the newest measurement is always last)."""
        if not isinstance(stats, StatsSnapshot):
            raise StoreError(f"record_stats() expects StatsSnapshot, got {type(stats).__name__}")

        def change(meta: EnvMetadata) -> dict[str, Any]:
            kept = [s for s in meta.stats if s.policy_snapshot != stats.policy_snapshot]
            return {"stats": [*kept, stats]}

        return self._update(env_id, f"recording stats of {env_id}", change)

    def set_status(self, env_id: str, status: EnvStatus | str) -> EnvMetadata:
        """Move ``env_id`` along its lifecycle; :class:`InvalidTransition` when
        :data:`~spade_core.metadata.TRANSITIONS` forbids it. Setting the current status is a no-op."""
        target = _status(status)

        def change(meta: EnvMetadata) -> dict[str, Any] | None:
            if meta.status == target:
                return None
            if target not in TRANSITIONS[meta.status]:
                allowed = ", ".join(sorted(s.value for s in TRANSITIONS[meta.status])) or "nothing"
                raise InvalidTransition(
                    f"{env_id}: cannot go from {meta.status.value} to {target.value} (allowed: {allowed})"
                )
            return {"status": target}

        return self._update(env_id, f"setting the status of {env_id}", change)

    def set_validation(self, env_id: str, report: ValidationReport) -> EnvMetadata:
        if not isinstance(report, ValidationReport):
            raise StoreError(f"set_validation() expects ValidationReport, got {type(report).__name__}")
        return self._update(env_id, f"recording validation of {env_id}", lambda meta: {"validation": report})

    def set_hint(self, env_id: str, hint: str | None) -> EnvMetadata:
        return self._update(env_id, f"setting the hint of {env_id}", lambda meta: {"hint": hint})

    def _update(
        self, env_id: str, action: str, change: Callable[[EnvMetadata], dict[str, Any] | None]
    ) -> EnvMetadata:
        """Read-modify-write of one document under the row's write lock."""

        def work(conn: Connection) -> EnvMetadata:
            document = conn.execute(_SELECT_DOCUMENT_FOR_UPDATE, {"id": env_id}).scalar()
            if document is None:
                raise EnvNotFound(f"no environment {env_id!r} in the store {self.where}")
            meta = codec.decode(document, env_id=env_id, where=self.where)
            updates = change(meta)
            if updates is None:
                return meta
            try:
                new = EnvMetadata.model_validate({**meta.model_dump(), **updates, "updated_at": _now()})
            except ValidationError as err:
                raise StoreError(f"{env_id}: invalid update: {err}") from None
            conn.execute(
                update(envs)
                .where(envs.c.id == env_id)
                .values(status=new.status.value, updated_at=new.updated_at.isoformat(), document=codec.encode(new))
            )
            return new

        return self._write(action, work)


def _lock_names(conn: Connection, names: Iterable[str]) -> None:
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
        conn.execute(_LOCK_NAME, {"key": key})


def _check_columns(meta: EnvMetadata) -> None:
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


class _Taken(Exception):
    """The id is taken: roll the fast claim back and apply the full rules."""


def _check_parents(meta: EnvMetadata) -> None:
    if meta.id in meta.parent_ids:
        raise StoreError(f"{meta.id}: an environment cannot be its own parent")


def _blob_row(digest: str, source: str, now: str) -> dict[str, Any]:
    return {"code_hash": digest, "source": source, "size": len(source.encode("utf-8")), "created_at": now}


def _status(value: EnvStatus | str) -> EnvStatus:
    try:
        return EnvStatus(value)
    except ValueError:
        known = ", ".join(s.value for s in EnvStatus)
        raise StoreError(f"unknown status {value!r} (known: {known})") from None


def _filtered(
    query: Select[Any],
    domain: str | None,
    skill: str | None,
    status: EnvStatus | str | None,
    name: str | None,
) -> Select[Any]:
    if domain is not None:
        query = query.where(envs.c.domain == domain)
    if skill is not None:
        query = query.where(envs.c.skill == skill)
    if status is not None:
        query = query.where(envs.c.status == _status(status).value)
    if name is not None:
        query = query.where(envs.c.name == name)
    return query
