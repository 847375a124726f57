"""Gymnasium registration of SPADE environments as ``spade/<name>-v<N>``.

``import spade_core`` calls :func:`register_on_import`, which registers

* every seed environment of every loaded domain plugin (trusted code: ``gymnasium.make``
  opens it through :func:`spade_core.seeds.make_seed_env`, in a worker process under the
  sandbox's call deadline, or in this process with ``in_process=True``; a seed the plugin
  got wrong is registered to refuse with why, :func:`spade_core.seeds.refused_seed_env`), and
* every admitted environment of the active store (untrusted code:
  :func:`spade_core.stored_envs.make_stored_env`
  hands it to the env runner ``store_envs_run`` names, spade-sandbox's ``sandbox`` by
  default, or runs it in-process only when ``store_envs_run = "in-process"``).

Contracts:

* Registration never fails the import: a missing store registers nothing (and is not
  created), a broken store or plugin is reported with ``warnings.warn`` naming it, and the
  rest is still registered.
* This module imports no package above the core: the runner of store code is found
  through the ``spade_register_env_runners`` hook (:mod:`spade_core.runners`), from the
  seed index while the plugins are not loaded.
* Entry points are strings, so nothing is imported for an environment before its
  ``gymnasium.make``.
* A spec's ``max_episode_steps`` is the environment's ``max_turns`` (seed and store alike);
  registration reads no store document for it (a store spec reads its own on first access).
* :func:`register` can be called again after the store changed: it adds new admitted ids
  and removes the ones it registered before that are no longer admitted; a seed id wins
  over a store id (reported unless the store holds the same code).
* The Python path and the optional C path (``spade_core._speedups``, chosen by
  :mod:`spade_core.native`; ``SPADE_CORE_NO_C=1`` forces Python) register the same specs in
  the same order. Cost is linear in the number of environments (specs go into Gymnasium's
  registry dict directly: ``gymnasium.register`` is quadratic in a loop).
* Store specs never reach the interpreter's shutdown collections: the Python path removes
  them at exit (``atexit``: handlers registered before ``import spade_core`` no longer see
  them); the C path keeps the registry alive and untracked past the teardown.

How registration is made fast (id snapshot, slots) and what it measures are in
``docs/architecture.md``. Registration starts no process: the runner's ``prepare`` (the
sandbox boots its zygote) runs at the first make from the store.
"""

from __future__ import annotations

import atexit
import gc
import warnings
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import not_
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gymnasium.envs.registration import EnvSpec
from gymnasium.envs.registration import registry as gym_registry

from . import native, seed_index
from .store.id_snapshot import names_of
from .stored_envs import NAMESPACE, PREFIX, STORED_ENTRY_POINT, StoredEnvSpec, read_stored, spec_class, stored_specs

if TYPE_CHECKING:
    from .store import EnvStore

SEED_ENTRY_POINT = "spade_core.seeds:make_seed_env"
REFUSED_ENTRY_POINT = "spade_core.seeds:refused_seed_env"

__all__ = ["NAMESPACE", "REFUSED_ENTRY_POINT", "SEED_ENTRY_POINT", "STORED_ENTRY_POINT", "Registration", "register",
           "register_on_import"]


@dataclass
class Registration:
    """What one :func:`register` call did."""

    seeds: list[str] = field(default_factory=list)
    stored: int = 0
    removed: int = 0
    store: str | None = None
    #: Human-readable problems (each also issued as a warning).
    problems: list[str] = field(default_factory=list)
    #: Seeds a plugin got wrong (``SpadePlugins.problems``), registered to refuse with this
    #: line; not warned about here (``spade list`` and ``spade plugins --check`` show them).
    refused: list[str] = field(default_factory=list)

    def problem(self, message: str) -> None:
        self.problems.append(message)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


#: Gym ids this module registered (a list: unique, since they come from the store's id
#: column), so re-registration can remove stale ones.
_registered_stored: list[str] = []
_registered_seeds: set[str] = set()


def register(store: EnvStore | str | None = None, *, seeds: bool = True) -> Registration:
    """(Re-)register seed environments and the admitted environments of ``store``.

    ``store`` is an open :class:`~spade_core.store.EnvStore`, a store URL, or ``None`` for
    the active store (``SPADE_HOME/store.db`` or ``store_url`` of ``spade.toml``).
    """
    result = Registration()
    if seeds:
        _register_seeds(result)
    _register_store(store, result)
    return result


def _register_store(store: EnvStore | str | None, result: Registration) -> None:
    url = _store_url(store, result)
    if url is not None:
        result.store = url
        found = _admitted_gym_ids(store, url, result)
        if found is not None:
            _register_stored(*found, url, result)


def register_on_import() -> None:
    """Called by ``import spade_core``; never raises (problems become warnings).

    Seed environments come from the seed index when it is valid (see
    :mod:`spade_core.seed_index`), so that the import need not load the plugins."""
    try:
        result = Registration()
        indexed = seed_index.load()
        from_plugins = indexed is None or not _register_indexed_seeds(indexed, result)
        if from_plugins:
            _register_seeds(result)
            if not result.problems and not result.refused:  # a plugin to fix is read again each time
                _save_seed_index()
        _register_store(None, result)
    except Exception as exc:  # the import must survive anything a store or plugin does
        warnings.warn(f"spade_core: environment registration failed: {exc}", RuntimeWarning, stacklevel=2)


# --- the active store ---------------------------------------------------------------------


def _store_url(store: EnvStore | str | None, result: Registration) -> str | None:
    """The store's URL (``None`` after reporting a problem)."""
    if store is None:
        try:
            from .run_settings import run_settings  # no pydantic on the import path

            return run_settings().store_url
        except Exception as exc:
            result.problem(f"spade_core: cannot determine the active store: {exc}")
            return None
    if isinstance(store, str):
        return store
    return store.url


def _admitted_gym_ids(
    store: EnvStore | str | None, url: str, result: Registration
) -> tuple[list[str], list[str]] | None:
    """``spade/<id>`` and name of every admitted environment, or ``None`` after reporting
    a problem."""
    from .errors import StoreError
    from .store import sqlite_reader

    try:
        if store is None or isinstance(store, str):
            path = sqlite_reader.sqlite_path(url)
            if path is not None:
                if not path.exists():
                    return [], []  # no store yet: nothing admitted, and do not create one
                found = sqlite_reader.admitted_snapshot(path, PREFIX)
                if found is not None:
                    return found
            from .store import EnvStore

            with EnvStore(url, create=False) as opened:  # other databases; stores to migrate
                gym_ids = [PREFIX + env_id for env_id in opened.admitted_ids()]
        else:
            gym_ids = [PREFIX + env_id for env_id in store.admitted_ids()]
        return gym_ids, names_of(gym_ids, PREFIX)
    except StoreError as exc:
        result.problem(f"spade_core: environments of the store were not registered: {exc}")
    except Exception as exc:
        result.problem(f"spade_core: environments of the store {url} were not registered: {type(exc).__name__}: {exc}")
    return None


def _release_stored_specs() -> None:
    """Take the store specs out of Gymnasium's registry (registered with ``atexit``).

    The registry is rebuilt without them rather than popped id by id: one pass in
    insertion order frees 100,000 specs in about 0.02 s, while popping them one lookup at
    a time cost 0.33 s on this project's test machine (random memory access). The pass is
    C-level iteration (``compress`` over ``isinstance`` results), about 5 ms less than a
    comprehension at 100,000 specs."""
    stored = map(isinstance, gym_registry.values(), repeat(StoredEnvSpec))
    kept = dict(compress(gym_registry.items(), map(not_, stored)))
    _registered_stored.clear()
    gym_registry.clear()
    gym_registry.update(kept)


_release_at_exit = False


def _at_exit() -> None:
    """Registered with ``atexit`` by the first registration of store specs.

    The C path keeps Gymnasium's registry alive past the teardown (one reference that is
    never given back) and off the collector's list: the teardown then neither frees the
    specs nor walks them (0.005-0.01 s less exit than releasing them, at 100,000 specs);
    and every ``atexit`` handler still sees them. Its specs are already untracked. The
    Python path takes them out of the registry (:func:`_release_stored_specs`)."""
    if _speedups is not None:
        _speedups.keep_alive(gym_registry)
    else:
        _release_stored_specs()


#: The C path (``spade_core._speedups``), or ``None`` for the Python path (see
#: :mod:`spade_core.native`).
_speedups = native.speedups


def _register_stored(gym_ids: list[str], names: list[str] | None, url: str, result: Registration) -> None:
    global _release_at_exit
    if gym_ids and not _release_at_exit:
        atexit.register(_at_exit)
        _release_at_exit = True
    if names is not None and len(names) != len(gym_ids):
        raise ValueError(f"spade_core: {len(gym_ids)} gym ids but {len(names)} names to register")
    if _speedups is not None:  # it pauses the collector itself, and its specs are untracked
        _register_stored_specs(gym_ids, names, url, result)
        return
    # Creating 100,000 objects triggers the cyclic collector again and again, each pass
    # walking the whole heap: half the cost of registration. Nothing created here can form
    # a reference cycle, so collection waits until the end.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        _register_stored_specs(gym_ids, names, url, result)
    finally:
        if was_enabled:
            gc.enable()


def _register_stored_specs(gym_ids: list[str], names: list[str] | None, url: str, result: Registration) -> None:
    # Ids come from the store's unique id column, so no set is built on the first (the
    # import's) registration (a set of 100,000 ids costs 0.015 s): seeds shadowed by a
    # store id are put back afterwards (a few dozen lookups), and only a re-registration
    # compares the old and new ids.
    seed_specs = {gym_id: gym_registry[gym_id] for gym_id in _registered_seeds if gym_id in gym_registry}
    removed = 0
    if _registered_stored:
        for gym_id in set(_registered_stored).difference(gym_ids):
            if isinstance(gym_registry.get(gym_id), StoredEnvSpec):
                del gym_registry[gym_id]
                removed += 1
    if _speedups is None:
        gym_registry.update(zip(gym_ids, stored_specs(gym_ids, url, names), strict=True))
    else:  # the same specs in the same order, made and inserted in one C loop
        _speedups.register_specs(
            gym_registry, spec_class(url), gym_ids, names_of(gym_ids, PREFIX) if names is None else names
        )
    _registered_stored[:] = gym_ids
    clashes = sorted(gym_id for gym_id, spec in seed_specs.items() if gym_registry[gym_id] is not spec)
    for gym_id in clashes:
        gym_registry[gym_id] = seed_specs[gym_id]
    if clashes:
        shadowed = set(clashes)
        _registered_stored[:] = [gym_id for gym_id in gym_ids if gym_id not in shadowed]
        # A store that holds the seed pool itself (self-play admits it) shadows nothing.
        differing = [gym_id for gym_id in clashes if not _stores_the_seed(url, gym_id, seed_specs[gym_id])]
        if differing:
            shown = ", ".join(differing[:5]) + (" ..." if len(differing) > 5 else "")
            result.problem(f"spade_core: store environments shadowed by seed environments of the same id: {shown}")
    result.stored = len(_registered_stored)
    result.removed = removed


def _stores_the_seed(url: str, gym_id: str, seed: EnvSpec) -> bool:
    """Whether the store's environment ``gym_id`` has the code of the seed environment
    registered under the same id (line endings normalised, as the store keeps code). Any
    problem reading either answers ``False``, so the clash is reported."""
    try:
        _, stored = read_stored(url, gym_id[len(PREFIX) :])
        source = Path(seed.kwargs["path"]).read_text(encoding="utf-8")
    except Exception:
        return False
    return stored == source.replace("\r\n", "\n").replace("\r", "\n")


# --- seed environments --------------------------------------------------------------------


def _register_seeds(result: Registration) -> None:
    try:
        from .plugins import get_plugins

        plugins = get_plugins()
        domains = plugins.domains()
        problems = plugins.problems()
    except Exception as exc:
        result.problem(f"spade_core: seed environments were not registered: {exc}")
        return
    _drop_refusals()
    for domain in domains.values():
        for seed in domain.seed_envs:
            _register_seed(seed.gym_id, str(seed.path), seed.class_name, seed.max_turns, domain.name, result,
                           tuple(domain.reward_range))
    _register_refusals({p.gym_id: str(p) for p in reversed(problems) if p.gym_id is not None}, result)
    for problem in problems:
        if problem.seed is None:  # a plugin whose hook raised, a domain left out: warned, as ever
            result.problem(f"spade_core: seed environments were not registered: {problem}")


#: Ids of seeds a plugin got wrong, registered so that ``gymnasium.make`` says why
#: (:func:`spade_core.seeds.refused_seed_env`); a store environment of the same id replaces
#: its refusal.
_refused_seeds: set[str] = set()


def _drop_refusals() -> None:
    """Take the refusals of an earlier registration out (a seed fixed since registers)."""
    for gym_id in _refused_seeds:
        spec = gym_registry.get(gym_id)
        if spec is not None and spec.entry_point == REFUSED_ENTRY_POINT:
            del gym_registry[gym_id]
    _refused_seeds.clear()


def _register_refusals(reasons: dict[str, str], result: Registration) -> None:
    for gym_id, reason in reasons.items():
        if gym_id in _registered_seeds or (gym_id in gym_registry and gym_registry[gym_id].entry_point != REFUSED_ENTRY_POINT):
            continue  # a seed registered under it (another version's problem), or someone else's
        gym_registry[gym_id] = EnvSpec(id=gym_id, entry_point=REFUSED_ENTRY_POINT, kwargs={"reason": reason})
        _refused_seeds.add(gym_id)
        result.refused.append(reason)


def _register_seed(
    gym_id: str, path: str, class_name: str | None, max_turns: int, domain: str, result: Registration,
    reward_range: tuple[float, float],
) -> None:
    spec = EnvSpec(
        id=gym_id,
        entry_point=SEED_ENTRY_POINT,
        kwargs={"path": path, "class_name": class_name, "max_turns": max_turns, "reward_range": reward_range},
        # the environment truncates at max_turns itself; the spec says so too, as Gymnasium
        # users read it (TimeLimit then agrees with the environment's own truncation)
        max_episode_steps=max_turns,
    )
    if gym_id in gym_registry and gym_id not in _registered_seeds:
        result.problem(f"spade_core: seed environment {gym_id} of domain {domain!r} replaces an existing registration")
    gym_registry[gym_id] = spec
    _registered_seeds.add(gym_id)
    result.seeds.append(gym_id)


def _register_indexed_seeds(indexed: dict[str, Any], result: Registration) -> bool:
    """Register the seeds of a valid seed index; ``False`` (nothing registered) when the
    plugins are already loaded or the index names an id that is taken."""
    if seed_index.plugins_loaded():
        return False
    seeds = indexed["seeds"]
    if any(seed["gym_id"] in gym_registry for seed in seeds):
        return False  # let the plugin path report the clash in full
    for seed in seeds:
        _register_seed(seed["gym_id"], seed["path"], seed["class_name"], seed["max_turns"], seed["domain"], result,
                       tuple(seed["reward_range"]))
    seed_index.remember(indexed)
    return True


def _save_seed_index() -> None:
    from .plugins import get_plugins

    plugins = get_plugins()
    domains = plugins.domains()
    seeds = [
        {
            "gym_id": seed.gym_id,
            "path": str(seed.path),
            "class_name": seed.class_name,
            "max_turns": seed.max_turns,
            "domain": domain.name,
            "reward_range": list(domain.reward_range),
        }
        for domain in domains.values()
        for seed in domain.seed_envs
    ]
    allowed = {name: sorted(domain.allowed_modules) for name, domain in domains.items()}
    runners = [runner.to_json() for runner in plugins.env_runners().values()]
    seed_index.save(seeds, allowed, plugins.module_names(), runners)
