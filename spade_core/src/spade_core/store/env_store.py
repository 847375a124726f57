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
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from sqlalchemy import Connection, Select, bindparam, func, select, text, update

from ..errors import EnvNotFound, InvalidTransition, StoreError
from ..metadata import TRANSITIONS, EnvMetadata, EnvStatus, StatsSnapshot, ValidationReport
from ..names import utcnow
from . import codec, migrations
from .adding import add_batch, add_in, check_parents, prepare_add
from .claims import claim_postgres, claim_sqlite
from .database import Database, open_database
from .layout import ADMITTED_IDS_SQL, STORE_SCHEMA_VERSION
from .schema import blobs, envs, parents

if TYPE_CHECKING:
    from ..config import SpadeConfig

_HASH_RE = re.compile(r"[0-9a-f]{64}")

# Statements built once (the writes' are :mod:`.adding`'s): constructing SQLAlchemy
# statements per call costs more than running them on SQLite.
_SELECT_DOCUMENT = select(envs.c.document).where(envs.c.id == bindparam("id"))
_SELECT_DOCUMENT_FOR_UPDATE = _SELECT_DOCUMENT.with_for_update()
_SELECT_SEQ = select(envs.c.seq).where(envs.c.id == bindparam("id"))
#: Rows per transaction in :meth:`EnvStore.add_many`.
DEFAULT_BATCH = 500


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
            check_parents(meta)

            def claim(driver: Any) -> None:
                if not claim_sqlite(driver, source, meta, document):
                    raise _Taken  # rolls back the code stored by the claim

            try:
                self._write_sqlite(action, claim)
                return meta
            except _Taken:
                pass
        elif self._db.is_psycopg:  # other PostgreSQL drivers take the full rules
            check_parents(meta)
            if self._write_statement(action, lambda driver: claim_postgres(driver, source, meta, document)):
                return meta
        return self._write(action, lambda conn: add_in(conn, source, meta, document, new_version, self.where))

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
        """:func:`.adding.prepare_add` on an open store."""
        self._check_open()
        return prepare_add(source, metadata)

    def _add_batch(self, batch: Sequence[tuple[str, EnvMetadata, str]], new_version: bool) -> list[EnvMetadata]:
        return self._write(
            f"adding {len(batch)} environments", lambda conn: add_batch(conn, batch, new_version, self.where)
        )

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
                new = EnvMetadata.model_validate({**meta.model_dump(), **updates, "updated_at": utcnow()})
            except ValidationError as err:
                raise StoreError(f"{env_id}: invalid update: {err}") from None
            conn.execute(
                update(envs)
                .where(envs.c.id == env_id)
                .values(status=new.status.value, updated_at=new.updated_at.isoformat(), document=codec.encode(new))
            )
            return new

        return self._write(action, work)


class _Taken(Exception):
    """The id is taken: roll the fast claim back and apply the full rules."""


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
