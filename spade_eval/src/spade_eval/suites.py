"""The built-in ``registry`` suite: environments of the registry (seeds and admitted store
environments) by ids, domain or skill, or the held-out split of a self-play run's pool.

Environments are made through ``spade_core.app.play.open_env``, as ``gym.make`` and ``spade
play`` make them: store code in the sandbox; seeds, trusted plugin code, in a worker process
of the trusted pool under the same call deadline.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spade_core.app.catalog import CatalogEntry, resolve, seed_entries
from spade_core.errors import SpadeError
from spade_core.evaluation import EpisodeSuite, EvalItem, SuiteContext
from spade_core.metadata import EnvStatus

#: Share of a run's designed pool held out from training-time play for evaluation.
HELD_OUT_SHARE = 0.2


class SuiteError(SpadeError, ValueError):
    """A suite was asked for something it cannot give (no environment matches, bad option)."""


def held_out(env_id: str, share: float = HELD_OUT_SHARE) -> bool:
    """Whether ``env_id`` is in the held-out split: a fixed hash of the id, so the split of
    a pool never changes as the pool grows."""
    digest = int.from_bytes(hashlib.sha256(env_id.encode()).digest()[:8], "big")
    return digest / 2**64 < share


def _parse_ids(ids: Any) -> list[str]:
    if ids is None:
        return []
    if isinstance(ids, str):
        return [i for i in ids.replace(",", " ").split() if i]
    return [str(i) for i in ids]


def registry_items(
    context: SuiteContext,
    *,
    size: int = 4,
    seed: int = 0,
    ids: Any = None,
    domain: str | None = None,
    skill: str | None = None,
    run: str | None = None,
) -> Sequence[EvalItem]:
    """``size`` episodes (seeds ``seed``, ``seed + 1``, ...) of each chosen environment."""
    from spade_core.app.play import open_env

    store = context.store
    entries: list[CatalogEntry] = []
    if run is not None:
        from spade_core.store import EnvStore

        db = Path(run) / "store.db"
        if not db.is_file():
            raise SuiteError(f"{run} holds no store.db: is it a self-play run folder?")
        store = EnvStore(f"sqlite:///{db}", create=False)
        if context.resources is not None:
            context.resources.callback(store.close)
        seeds = {e.id for e in seed_entries(context.plugins)}
        entries = [CatalogEntry("store", m) for m in store.find(status=EnvStatus.admitted, limit=None)
                   if m.id not in seeds and held_out(m.id)]
        if not entries:
            raise SuiteError(f"the pool of {run} has no held-out designed environment yet "
                             f"({HELD_OUT_SHARE:.0%} of its admitted designs are held out)")
    elif _parse_ids(ids):
        entries = [resolve(ref, context.plugins, store) for ref in _parse_ids(ids)]
    else:
        entries = list(seed_entries(context.plugins, domain=domain, skill=skill))
        if store is not None:
            entries += [CatalogEntry("store", m)
                        for m in store.find(domain=domain, skill=skill, status=EnvStatus.admitted, limit=None)]
    if domain is not None or skill is not None:
        entries = [e for e in entries if (domain is None or e.metadata.domain == domain)
                   and (skill is None or e.metadata.skill == skill)]
    if not entries:
        raise SuiteError("no registry environment matches (ids, domain, skill): nothing to evaluate")
    items = []
    for entry in entries:
        for k in range(size):
            items.append(EvalItem(
                group=entry.metadata.skill, seed=seed + k, label=entry.id, max_turns=entry.metadata.max_turns,
                make_env=lambda entry=entry, store=store: open_env(entry, context.config, store=store,
                                                                   plugins=context.plugins),
            ))
    return items


REGISTRY_SUITE = EpisodeSuite(
    name="registry",
    description="Registry environments (seeds and admitted store environments; store code in the sandbox), "
                "per skill: by ids, domain or skill, or the held-out split of a self-play run's pool.",
    items=registry_items,
    trusted=False,
    options={"ids": "environment ids, comma-separated", "domain": "only this domain", "skill": "only this skill",
             "run": "a self-play run folder: its held-out designed environments"},
)
