"""One view over every environment a user can name: the store's and the plugins' seeds.

``spade list``, ``spade show`` and ``spade play`` resolve ids here. Store environments are
untrusted generated code; seed environments ship with an installed plugin and are
trusted. :class:`CatalogEntry` keeps that difference visible (``kind``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..config import SpadeConfig
from ..domains import Domain, SeedEnv
from ..errors import EnvNotFound, SpadeError, StoreError
from ..metadata import EnvMetadata, EnvStatus, code_hash

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
        }


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


def resolve(env_ref: str, plugins: SpadePlugins, store: EnvStore) -> CatalogEntry:
    """Find ``env_ref`` (``name-vN``, ``name`` for the latest version, or ``spade/<id>``).

    Seeds are looked up first: they are few, and their names are reserved in the
    Gymnasium namespace. Raises :class:`EnvNotFound` naming both places searched.
    """
    ref = _strip_namespace(env_ref.strip())
    for d in plugins.domains().values():
        for s in d.seed_envs:
            if ref in (s.id, s.name):
                return CatalogEntry("seed", seed_metadata(d, s, with_hash=True), domain=d, seed=s)
    try:
        return CatalogEntry("store", store.resolve(ref))
    except EnvNotFound:
        raise EnvNotFound(
            f"no environment {env_ref!r} in the store or among the seed environments (`spade list` shows them)"
        ) from None
