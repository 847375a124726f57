"""One view over every environment a user can name: the store's and the plugins' seeds.

``spade list``, ``spade show`` and ``spade play`` resolve ids here; :class:`Catalog` is the
same view as one object (the plugins and the store together), handed whole to what lists,
resolves and reads environments beyond a single command: ``spade serve``'s served
environments, the browser page, the TRL adapter. Store environments are untrusted generated
code; seed environments ship with an installed plugin and are trusted. :class:`CatalogEntry`
keeps that difference visible (``kind``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..config import SpadeConfig
from ..domains import Domain, SeedEnv
from ..errors import EnvNotFound, SpadeError, StoreError
from ..metadata import EnvMetadata, EnvStatus, ValidationReport, code_hash
from ..paths import spade_home

if TYPE_CHECKING:
    from ..plugins import SpadePlugins
    from ..store import EnvStore

Kind = Literal["store", "seed"]


@contextmanager
def open_store(config: SpadeConfig, *, read_only: bool = False) -> Iterator[Any]:
    """The configured :class:`~spade_core.store.EnvStore`, closed on exit.

    ``read_only`` is for commands that only look (``list``, ``show``, ``play``, ``export``):
    they never create a store. A default store (``SPADE_HOME/store.db``, no ``store_url``)
    that does not exist yet reads as an empty store, so a fresh ``SPADE_HOME`` stays empty;
    a ``store_url`` the configuration names must exist, else a :class:`StoreError` names
    the file. Writers (``import``, ``design``) create the store on first use.

    Any failure that is not already a SpadeError (a driver error escaping the store) is
    reported as a :class:`StoreError` naming the store, so the CLI never shows a traceback.
    """
    from ..store import EnvStore
    from ..store.sqlite_reader import sqlite_path

    url = config.resolved_store_url
    if read_only:
        path = sqlite_path(url)
        if path is not None and not path.exists():
            if config.store_url:
                raise StoreError(
                    f"{path}: store file does not exist (store_url = {config.store_url!r} in the configuration); "
                    "check the path, or create the store with `spade import`"
                )
            url = "sqlite://"  # an empty store, in memory: nothing is written to SPADE_HOME
    try:
        store = EnvStore(url, create=not read_only or url == "sqlite://")
    except SpadeError:
        raise
    except Exception as exc:
        raise StoreError(f"cannot open the store {url}: {exc}") from exc
    try:
        yield store
    finally:
        store.close()


@dataclass(frozen=True)
class CatalogEntry:
    """An environment as listed: its metadata and where it comes from."""

    kind: Kind
    metadata: EnvMetadata
    #: For seeds: the domain plugin that ships it.
    domain: Domain | None = None
    seed: SeedEnv | None = None

    @property
    def id(self) -> str:
        return self.metadata.id

    def source(self, store: EnvStore | None = None) -> str:
        if self.seed is not None:
            return self.seed.source()
        if store is None:
            raise ValueError("a store entry's source needs the store")
        return str(store.get_source(self.metadata.id))

    def summary(self) -> dict[str, Any]:
        """The JSON row of ``spade list --json``."""
        m = self.metadata
        stats = m.latest_stats
        return {
            "kind": self.kind,
            "id": m.id,
            "gym_id": m.gym_id,
            "name": m.name,
            "version": m.version,
            "domain": m.domain,
            "skill": m.skill,
            "status": m.status.value,
            "max_turns": m.max_turns,
            "difficulty": m.difficulty,
            "description": m.description,
            "win_rate": stats.win_rate if stats else None,
            "regret": stats.regret if stats else None,
            "samples": stats.samples if stats else None,
            "learnability": learnability_of(m),
        }


def learnability_of(m: EnvMetadata) -> dict[str, Any] | None:
    """The newest learnability measurement recorded with ``m`` (``spade experiment learn``), as JSON."""
    found = next((s.learnability for s in reversed(m.stats) if s.learnability is not None), None)
    return found.model_dump(mode="json") if found is not None else None


@dataclass(frozen=True)
class Catalog:
    """Every environment a user can name, the plugins' seeds and the store's, as one object:
    whoever lists, resolves or reads environments holds this, never the plugins and the
    store apart (``spade_serve.catalog.build_catalog`` serves a selection of it)."""

    plugins: SpadePlugins
    store: EnvStore

    def resolve(self, env_ref: str, *, seeds: bool = True) -> CatalogEntry:
        """:func:`resolve`; ``seeds=False`` looks in the store alone, for ``env_ref`` as
        given (``spade serve --all`` lists every seed up front). :class:`EnvNotFound` when
        nothing answers to it."""
        if seeds:
            return resolve(env_ref, self.plugins, self.store)
        return CatalogEntry("store", self.store.resolve(_strip_namespace(env_ref)))

    def seeds(self, *, domain: str | None = None, skill: str | None = None) -> list[CatalogEntry]:
        """The seed environments of every installed domain (:func:`seed_entries`)."""
        return seed_entries(self.plugins, domain=domain, skill=skill)

    def stored(
        self,
        *,
        domain: str | None = None,
        skill: str | None = None,
        status: EnvStatus | None = None,
        after: str | None = None,
        limit: int | None = None,
    ) -> list[CatalogEntry]:
        """The store's environments that match the filters, in its order, at most ``limit``
        of them past the id ``after`` (:meth:`~spade_core.store.EnvStore.find`)."""
        found = self.store.find(domain=domain, skill=skill, status=status, after=after, limit=limit)
        return [CatalogEntry("store", meta) for meta in found]

    def source(self, entry: CatalogEntry) -> str:
        """The entry's code: the seed's file, or the store's row."""
        return entry.source(self.store)

    def allowed_modules(self, entry: CatalogEntry) -> tuple[str, ...]:
        """The helper modules the entry's domain allows its code, sorted; none beyond the
        sandbox's standard allow-list when that domain is not installed."""
        try:
            return tuple(sorted(self.plugins.domain(entry.metadata.domain).allowed_modules))
        except SpadeError:
            return ()


def seed_metadata(domain: Domain, seed: SeedEnv, *, with_hash: bool = False) -> EnvMetadata:
    """Metadata of a seed environment (seeds are admitted by construction: they are trusted
    code shipped by a plugin and registered with Gymnasium)."""
    return EnvMetadata(
        name=seed.name,
        version=seed.version,
        domain=domain.name,
        skill=seed.skill,
        description=seed.description,
        difficulty=seed.difficulty,
        max_turns=seed.max_turns,
        reward_range=domain.reward_range,
        action_format=domain.action_format,
        class_name=seed.class_name,
        hint=seed.hint,
        code_hash=code_hash(seed.source()) if with_hash else "",
        status=EnvStatus.admitted,
        tags=["seed"],
    )


#: Where the validation reports of seed environments are kept, by code hash (a seed's
#: metadata is the plugin's, not the store's: there is no row to record a report on).
SEED_REPORTS = Path("cache") / "seed-validation"


def seed_report(code: str) -> ValidationReport | None:
    """The validation report last recorded for a seed whose source has hash ``code``
    (:func:`save_seed_report`; ``spade validate --seeds`` and ``spade validate SEED``),
    or ``None``: never validated, or validated as other code (any change of the source is
    another hash). A damaged file reads as none."""
    path = spade_home() / SEED_REPORTS / f"{code}.json"
    try:
        return ValidationReport.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def save_seed_report(code: str, report: ValidationReport) -> Path:
    """Record ``report`` for the seed source of hash ``code`` under ``SPADE_HOME`` (written
    whole or not at all); returns the file."""
    folder = spade_home() / SEED_REPORTS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{code}.json"
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(report.model_dump_json(), encoding="utf-8")
    os.replace(tmp, path)
    return path


def seed_entries(
    plugins: SpadePlugins, *, domain: str | None = None, skill: str | None = None, status: EnvStatus | None = None
) -> list[CatalogEntry]:
    """Seed environments of every installed domain that match the filters."""
    if status is not None and status != EnvStatus.admitted:
        return []
    out = []
    for d in plugins.domains().values():
        if domain is not None and d.name != domain:
            continue
        for s in d.seed_envs:
            if skill is not None and s.skill != skill:
                continue
            out.append(CatalogEntry("seed", seed_metadata(d, s), domain=d, seed=s))
    return out


def _strip_namespace(env_ref: str) -> str:
    return env_ref.removeprefix("spade/")


def _recorded_stats(store: EnvStore | None, seed: EnvMetadata) -> list[Any]:
    """What the store measured of a seed (``spade experiment learn`` records it under the
    seed's id): the stats of a stored copy with the seed's very code, else none (and none
    without a store)."""
    if store is None:
        return []
    try:
        stored = store.get(seed.id)
    except EnvNotFound:
        return []
    return list(stored.stats) if stored.code_hash == seed.code_hash else []


def resolve(env_ref: str, plugins: SpadePlugins, store: EnvStore) -> CatalogEntry:
    """Find ``env_ref`` (``name-vN``, ``name`` for the latest version, or ``spade/<id>``).

    Seeds are looked up first: they are few, and their names are reserved in the
    Gymnasium namespace; a seed's entry carries its last recorded validation report
    (:func:`seed_report`). Raises :class:`EnvNotFound` naming both places searched.
    """
    ref = _strip_namespace(env_ref.strip())
    for d in plugins.domains().values():
        for s in d.seed_envs:
            if ref in (s.id, s.name):
                meta = seed_metadata(d, s, with_hash=True)
                meta = meta.model_copy(update={"validation": seed_report(meta.code_hash),
                                               "stats": _recorded_stats(store, meta)})
                return CatalogEntry("seed", meta, domain=d, seed=s)
    try:
        return CatalogEntry("store", store.resolve(ref))
    except EnvNotFound:
        raise EnvNotFound(
            f"no environment {env_ref!r} in the store or among the seed environments (`spade list` shows them)"
        ) from None
