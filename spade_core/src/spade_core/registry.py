"""Gymnasium registration of SPADE environments as ``spade/<name>-v<N>``.

``import spade_core`` calls :func:`register_on_import`, which registers

* every seed environment of every loaded domain plugin (trusted code: ``gymnasium.make``
  opens it through :func:`spade_core.seeds.make_seed_env`, in a worker process under the
  sandbox's call deadline, or in this process with ``in_process=True``; a seed the plugin
  got wrong is registered to refuse with why, :func:`spade_core.seeds.refused_seed_env`), and
* every admitted environment of the active store (untrusted code: :func:`make_stored_env`
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
import dataclasses
import gc
import sys
import warnings
from collections import deque
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import not_
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gymnasium.envs.registration import EnvSpec
from gymnasium.envs.registration import registry as gym_registry

from . import native, seed_index
from .runners import IN_PROCESS, EnvRunner
from .store.id_snapshot import names_of

if TYPE_CHECKING:
    from .config import SpadeConfig
    from .env import TextEnv
    from .store import EnvStore

NAMESPACE = "spade"
SEED_ENTRY_POINT = "spade_core.seeds:make_seed_env"
STORED_ENTRY_POINT = "spade_core.registry:make_stored_env"
REFUSED_ENTRY_POINT = "spade_core.seeds:refused_seed_env"

_PREFIX = NAMESPACE + "/"


class _Derived:
    """``version`` and ``kwargs`` of a :class:`StoredEnvSpec`: computed from its id on first
    access and cached in the instance dict (a non-data descriptor: the cached value then
    shadows it). A descriptor rather than ``__getattr__``: a class with ``__getattr__``
    makes every attribute read of its instances take the slow path, and ``gymnasium.make``
    reads ``namespace`` and ``name`` of every registered spec (``find_highest_version``)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, spec: StoredEnvSpec | None, owner: type | None = None) -> Any:
        if spec is None:
            return self
        env_id = spec.id[len(_PREFIX) :]
        values = spec.__dict__
        values.setdefault("version", int(env_id.rpartition("-v")[2]))
        values.setdefault("kwargs", {"env_id": env_id, "store_url": type(spec)._store_url})
        return values[self.name]


class _MaxEpisodeSteps:
    """``max_episode_steps`` of a :class:`StoredEnvSpec`: the environment's ``max_turns``,
    as a seed spec carries it (the environment truncates there itself; ``TimeLimit`` then
    agrees with it). Registration reads no document, so the value is read on first access
    (one indexed row) and cached in the instance dict, like :class:`_Derived`.
    ``gymnasium.make`` calls the entry point before it reads the field, and
    :func:`make_stored_env` records the ``max_turns`` of the document it read on the
    registered spec, so a make reads the store once. A store that cannot be read answers
    ``None`` (no ``TimeLimit``; the make itself reports the problem)."""

    def __get__(self, spec: StoredEnvSpec | None, owner: type | None = None) -> Any:
        if spec is None:
            return self
        values = spec.__dict__
        if "max_episode_steps" not in values:
            values["max_episode_steps"] = _stored_max_turns(type(spec)._store_url, spec.id[len(_PREFIX) :])
        return values["max_episode_steps"]


def _max_steps(max_turns: Any) -> int | None:
    """A document's ``max_turns`` as a spec's ``max_episode_steps`` (a positive int, else ``None``)."""
    return max_turns if type(max_turns) is int and max_turns > 0 else None


def _stored_max_turns(url: str | None, env_id: str) -> int | None:
    import json

    if url is None:
        return None
    try:
        return _max_steps(json.loads(_read_stored(url, env_id)[0]).get("max_turns"))
    except Exception:  # an attribute read must not raise: the make reports what went wrong
        return None


def _note_max_turns(url: str, env_id: str, max_turns: Any) -> None:
    """Record the ``max_turns`` a make read on the registered spec of ``env_id`` (see
    :class:`_MaxEpisodeSteps`), unless it was read already."""
    spec = gym_registry.get(_PREFIX + env_id)
    if isinstance(spec, StoredEnvSpec) and type(spec)._store_url == url:
        spec.__dict__.setdefault("max_episode_steps", _max_steps(max_turns))


class StoredEnvSpec(EnvSpec):
    """The spec of an admitted store environment, cheap enough to build 100,000 at import.

    An instance is created without ``EnvSpec.__init__`` and holds only its ``id`` and
    ``name``, in slots (no per-instance dict is allocated until a derived field is cached:
    a third of the cost of building one); the store URL is an attribute of its class (one
    subclass per store, see :func:`_spec_class`); ``version`` and ``kwargs`` are derived on
    first access (and cached in the instance dict); ``max_episode_steps`` is read from the
    store on first access (see :class:`_MaxEpisodeSteps`); every other field is the
    class-level default. It is a real ``EnvSpec``: ``gymnasium.make``, ``pprint_registry``,
    ``to_json`` and ``dataclasses.replace`` see the values a constructed spec would have, and pickling
    or copying gives a plain ``EnvSpec`` with those values.
    """

    # ``EnvSpec`` declares ``id`` and ``name`` without class-level defaults, so slots of the
    # same names take their place; the base class still provides ``__dict__``.
    __slots__ = ("id", "name")

    entry_point = STORED_ENTRY_POINT
    namespace = NAMESPACE
    additional_wrappers = ()
    version = _Derived()
    kwargs = _Derived()
    max_episode_steps = _MaxEpisodeSteps()
    _store_url: str | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        init = {f.name: getattr(self, f.name) for f in dataclasses.fields(EnvSpec) if f.init}
        return (_plain_spec, (init,))


def _plain_spec(init: dict[str, Any]) -> EnvSpec:
    return EnvSpec(**init)


_spec_classes: dict[str | None, type[StoredEnvSpec]] = {}


def _spec_class(store_url: str) -> type[StoredEnvSpec]:
    """The StoredEnvSpec subclass of one store (a handful per process at most)."""
    cls = _spec_classes.get(store_url)
    if cls is None:
        cls = type("StoredEnvSpec", (StoredEnvSpec,), {"_store_url": store_url, "__module__": __name__})
        _spec_classes[store_url] = cls
    return cls


_set_id = vars(StoredEnvSpec)["id"].__set__  # the slot descriptors
_set_name = vars(StoredEnvSpec)["name"].__set__


def _stored_specs(gym_ids: list[str], store_url: str, names: list[str] | None = None) -> list[StoredEnvSpec]:
    """Specs for ``spade/<id>`` ids (and their names, derived when not given): the hot
    path of registration.

    One object per id holding ``id`` and ``name``, created and filled by C-level iteration
    (no Python frame per id). ``name`` is set eagerly because ``gymnasium.make`` reads the
    namespace and name of every registered spec (``find_highest_version``) on each call.
    """
    specs = list(map(object.__new__, repeat(_spec_class(store_url), len(gym_ids))))
    deque(map(_set_id, specs, gym_ids), maxlen=0)
    deque(map(_set_name, specs, names if names is not None else names_of(gym_ids, _PREFIX)), maxlen=0)
    return specs


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
                found = sqlite_reader.admitted_snapshot(path, _PREFIX)
                if found is not None:
                    return found
            from .store import EnvStore

            with EnvStore(url, create=False) as opened:  # other databases; stores to migrate
                gym_ids = [_PREFIX + env_id for env_id in opened.admitted_ids()]
        else:
            gym_ids = [_PREFIX + env_id for env_id in store.admitted_ids()]
        return gym_ids, names_of(gym_ids, _PREFIX)
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
        gym_registry.update(zip(gym_ids, _stored_specs(gym_ids, url, names), strict=True))
    else:  # the same specs in the same order, made and inserted in one C loop
        _speedups.register_specs(
            gym_registry, _spec_class(url), gym_ids, names_of(gym_ids, _PREFIX) if names is None else names
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
        _, stored = _read_stored(url, gym_id[len(_PREFIX) :])
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


def _plugins_loaded() -> bool:
    """Whether the process-wide plugin set is loaded (without importing pluggy to ask)."""
    module = sys.modules.get(f"{__package__}.plugins")
    return module is not None and getattr(module, "_plugins", None) is not None


#: Allowed modules per domain and the env runners, from the seed index while the plugins
#: are not loaded.
_indexed_allowed_modules: dict[str, list[str]] | None = None
_indexed_runners: dict[str, EnvRunner] | None = None


def _register_indexed_seeds(indexed: dict[str, Any], result: Registration) -> bool:
    """Register the seeds of a valid seed index; ``False`` (nothing registered) when the
    plugins are already loaded or the index names an id that is taken."""
    global _indexed_allowed_modules, _indexed_runners
    if _plugins_loaded():
        return False
    seeds = indexed["seeds"]
    if any(seed["gym_id"] in gym_registry for seed in seeds):
        return False  # let the plugin path report the clash in full
    for seed in seeds:
        _register_seed(seed["gym_id"], seed["path"], seed["class_name"], seed["max_turns"], seed["domain"], result,
                       tuple(seed["reward_range"]))
    _indexed_allowed_modules = indexed["allowed_modules"]
    _indexed_runners = indexed["runners"]
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


# --- entry points: called by gymnasium.make -------------------------------------------------


def make_stored_env(
    env_id: str, store_url: str | None = None, render_mode: str | None = None, config: SpadeConfig | None = None
) -> TextEnv:
    """An admitted store environment, run by the env runner ``store_envs_run`` names
    (``"sandbox"`` by default: spade-sandbox's, see :mod:`spade_core.runners`), or in this
    process when the configuration says ``store_envs_run = "in-process"``.

    ``config`` is the configuration the caller loaded (``None``: the active one, as
    ``gymnasium.make`` from a fresh interpreter has it). Raises
    :class:`~spade_core.errors.UntrustedCodeError` when no loaded plugin provides the runner
    and in-process execution was not chosen.
    """
    import json

    if config is None:
        from .run_settings import run_settings  # pydantic only when the config needs it

        settings = run_settings()
        default_url, run, sandbox = settings.store_url, settings.store_envs_run, settings.sandbox
    else:
        default_url, run, sandbox = config.resolved_store_url, config.store_envs_run, config.sandbox
    url = store_url or default_url
    runner = None if run == IN_PROCESS else env_runner(run)
    if runner is not None:
        runner.run_prepare()  # before the store is read: its work overlaps ours
    document, source = _read_stored(url, env_id)
    info = json.loads(document)
    max_turns = info.get("max_turns")
    _note_max_turns(url, env_id, max_turns)
    reward_range = tuple(info.get("reward_range") or (0.0, 1.0))
    if run == IN_PROCESS:
        from .env import ReferenceEnvAdapter
        from .source import instantiate, load_trusted_class

        cls = load_trusted_class(source, info.get("class_name"), source_name=env_id)
        return ReferenceEnvAdapter(
            lambda: instantiate(cls), max_turns=max_turns, reward_range=reward_range, render_mode=render_mode
        )
    if runner is None:
        from .errors import UntrustedCodeError

        raise UntrustedCodeError(
            f"{env_id} comes from the store and is untrusted: it runs only in the {run}, and no loaded "
            f"plugin provides the {run!r} env runner (spade-sandbox is not installed, or SPADE_PLUGINS / "
            "the config's 'plugins' leaves it out). Install it (pip install spade-sandbox), or, for code "
            'you trust, opt in with store_envs_run = "in-process" under [spade] in spade.toml.'
        )
    return runner.make_env(
        source,
        max_turns=max_turns,
        allowed_modules=_allowed_modules(info.get("domain")),
        reward_range=reward_range,
        class_name=info.get("class_name"),
        render_mode=render_mode,
        sandbox=sandbox,
    )


def env_runner(name: str) -> EnvRunner | None:
    """The env runner registered as ``name`` (:mod:`spade_core.runners`), or ``None``: from
    the seed index while the plugins are not loaded (no plugin is imported), else from the
    process-wide plugin set."""
    if _indexed_runners is not None and not _plugins_loaded():
        return _indexed_runners.get(name)
    from .plugins import get_plugins

    return get_plugins().env_runners().get(name)


def _read_stored(url: str, env_id: str) -> tuple[str, str]:
    from .store import sqlite_reader

    path = sqlite_reader.sqlite_path(url)
    if path is not None:
        if not path.exists():
            from .errors import StoreError

            raise StoreError(f"{path}: store file does not exist")
        found = sqlite_reader.document_and_source(path, env_id)
        if found is not None:
            return found
    from .store import EnvStore

    with EnvStore(url, create=False) as store:
        meta = store.get(env_id)
        return meta.model_dump_json(), store.get_source(meta.code_hash)


def _allowed_modules(domain: str | None) -> tuple[str, ...]:
    if not domain:
        return ()
    if _indexed_allowed_modules is not None and not _plugins_loaded():
        return tuple(_indexed_allowed_modules.get(domain, ()))
    from .plugins import get_plugins

    found = get_plugins().domains().get(domain)
    return tuple(sorted(found.allowed_modules)) if found is not None else ()
