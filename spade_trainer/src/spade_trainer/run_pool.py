"""The pool a self-play run starts from, put into the run's own store at setup.

Three sources, each idempotent (a resumed run adds nothing twice): the domain's seed
environments (``import_seed_pool``), the environments a run names (``pool``: seeds or
stored environments at a knob setting, :mod:`.envrefs`), and the admitted environments of
another store (``pool_from``). Everything added is admitted, so the loop plays it and the
designer may edit it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from spade_core.errors import EnvNotFound
from spade_core.metadata import EnvMetadata, EnvStatus

from .errors import ConfigError

if TYPE_CHECKING:
    from spade_core.config import SpadeConfig
    from spade_core.domains import Domain
    from spade_core.plugins import SpadePlugins
    from spade_core.store import EnvStore

    from .envrefs import ResolvedEnv

#: What of another store's record a run keeps: its code and how to play it, not its history
#: there (lineage, stats, status).
_PLAYABLE = ("name", "version", "domain", "skill", "description", "difficulty", "max_turns", "reward_range",
             "action_format", "class_name", "document", "designer_model", "hint", "nondeterministic", "tags")


def _absent(store: EnvStore, env_id: str) -> bool:
    try:
        store.get(env_id)
    except EnvNotFound:
        return True
    return False


def import_seed_pool(store: EnvStore, domain: Domain) -> int:
    """Add ``domain``'s seed environments to ``store`` as admitted; returns how many were added."""
    added = 0
    for seed in domain.seed_envs:
        if not _absent(store, seed.id):
            continue
        meta = EnvMetadata(name=seed.name, version=seed.version, domain=domain.name, skill=seed.skill,
                           description=seed.description, difficulty=seed.difficulty, max_turns=seed.max_turns,
                           action_format=domain.action_format, class_name=seed.class_name, hint=seed.hint,
                           tags=["seed"])
        store.add(seed.source(), meta)
        store.set_status(seed.id, EnvStatus.admitted)
        added += 1
    return added


def import_store_pool(store: EnvStore, path: Path, domain: str) -> int:
    """Add the admitted environments of ``domain`` in the store at ``path`` to ``store`` as
    admitted, with their hints; returns how many were added."""
    from spade_core.store import EnvStore

    if not Path(path).is_file():
        raise ConfigError(f"pool_from = {str(path)!r}: no such store file")
    added = 0
    with EnvStore(f"sqlite:///{path}", create=False) as other:
        for meta in other.find(domain=domain, status=EnvStatus.admitted, limit=None):
            if not _absent(store, meta.id):
                continue
            stored = store.add(other.get_source(meta.id), EnvMetadata(**{k: getattr(meta, k) for k in _PLAYABLE}))
            store.set_status(stored.id, EnvStatus.admitted)
            added += 1
    if added == 0 and not store.find(domain=domain, status=EnvStatus.admitted):
        raise ConfigError(f"pool_from = {str(path)!r} holds no admitted environment of domain {domain!r}")
    return added


def resolve_refs(refs: list[str], plugins: SpadePlugins, spade_config: SpadeConfig) -> list[ResolvedEnv]:
    """Each of ``refs`` looked up among the seeds and in the configured store."""
    from spade_core.app.catalog import open_store

    from .envrefs import resolve_env

    with open_store(spade_config, read_only=True) as active:
        return [resolve_env(ref, plugins, active) for ref in refs]


def add_resolved(store: EnvStore, env: ResolvedEnv, *, status: EnvStatus = EnvStatus.admitted) -> EnvMetadata:
    """``env`` in ``store`` (its own id when it is a seed or a stored environment as written,
    a parameter edit of it at a knob setting), with ``status``; the record already there
    when it was added before."""
    meta = env.metadata
    keep = {k: getattr(meta, k) for k in _PLAYABLE}
    if env.parent is not None:
        keep.update(parent_ids=list(meta.parent_ids), edit=meta.edit)
    for existing in store.find(name=meta.name, limit=None):
        if existing.code_hash == _hash(env.source):
            stored = existing
            break
    else:
        stored = store.add(env.source, EnvMetadata(**keep))
    if stored.status != status:
        stored = store.set_status(stored.id, status)
    return stored


def _hash(source: str) -> str:
    from spade_core.metadata import code_hash

    return code_hash(source)


def import_named_pool(store: EnvStore, refs: list[str], domain: str, plugins: SpadePlugins,
                      spade_config: SpadeConfig) -> list[EnvMetadata]:
    """The environments ``refs`` names (``pool``), admitted into ``store``; each must be of
    the run's ``domain``."""
    out = []
    for env in resolve_refs(refs, plugins, spade_config):
        if env.metadata.domain != domain:
            raise ConfigError(f"pool entry {str(env.ref)!r} is of domain {env.metadata.domain!r}, not the run's "
                              f"{domain!r}")
        out.append(add_resolved(store, env))
    return out


__all__ = ["add_resolved", "import_named_pool", "import_seed_pool", "import_store_pool", "resolve_refs"]
