"""Admitted store environments as Gymnasium sees them: their specs, cheap enough to build
100,000 at import (:class:`StoredEnvSpec`, made by :func:`stored_specs`), and their entry
point :func:`make_stored_env`, which hands an environment's code to the env runner
``store_envs_run`` names (spade-sandbox's ``sandbox`` by default) or runs it in this process
only when ``store_envs_run = "in-process"``. :mod:`spade_core.registry` registers the specs."""

from __future__ import annotations

import dataclasses
from collections import deque
from itertools import repeat
from typing import TYPE_CHECKING, Any

from gymnasium.envs.registration import EnvSpec
from gymnasium.envs.registration import registry as gym_registry

from .runners import IN_PROCESS
from .seed_index import allowed_modules, env_runner
from .store.id_snapshot import names_of

if TYPE_CHECKING:
    from .config import SpadeConfig
    from .env import TextEnv

NAMESPACE = "spade"
STORED_ENTRY_POINT = "spade_core.stored_envs:make_stored_env"
PREFIX = NAMESPACE + "/"


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
        env_id = spec.id[len(PREFIX) :]
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
            values["max_episode_steps"] = _stored_max_turns(type(spec)._store_url, spec.id[len(PREFIX) :])
        return values["max_episode_steps"]


def _max_steps(max_turns: Any) -> int | None:
    """A document's ``max_turns`` as a spec's ``max_episode_steps`` (a positive int, else ``None``)."""
    return max_turns if type(max_turns) is int and max_turns > 0 else None


def _stored_max_turns(url: str | None, env_id: str) -> int | None:
    import json

    if url is None:
        return None
    try:
        return _max_steps(json.loads(read_stored(url, env_id)[0]).get("max_turns"))
    except Exception:  # an attribute read must not raise: the make reports what went wrong
        return None


def note_max_turns(url: str, env_id: str, max_turns: Any) -> None:
    """Record the ``max_turns`` a make read on the registered spec of ``env_id`` (see
    :class:`_MaxEpisodeSteps`), unless it was read already."""
    spec = gym_registry.get(PREFIX + env_id)
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


def spec_class(store_url: str) -> type[StoredEnvSpec]:
    """The StoredEnvSpec subclass of one store (a handful per process at most)."""
    cls = _spec_classes.get(store_url)
    if cls is None:
        cls = type("StoredEnvSpec", (StoredEnvSpec,), {"_store_url": store_url, "__module__": __name__})
        _spec_classes[store_url] = cls
    return cls


_set_id = vars(StoredEnvSpec)["id"].__set__  # the slot descriptors


_set_name = vars(StoredEnvSpec)["name"].__set__


def stored_specs(gym_ids: list[str], store_url: str, names: list[str] | None = None) -> list[StoredEnvSpec]:
    """Specs for ``spade/<id>`` ids (and their names, derived when not given): the hot
    path of registration.

    One object per id holding ``id`` and ``name``, created and filled by C-level iteration
    (no Python frame per id). ``name`` is set eagerly because ``gymnasium.make`` reads the
    namespace and name of every registered spec (``find_highest_version``) on each call.
    """
    specs = list(map(object.__new__, repeat(spec_class(store_url), len(gym_ids))))
    deque(map(_set_id, specs, gym_ids), maxlen=0)
    deque(map(_set_name, specs, names if names is not None else names_of(gym_ids, PREFIX)), maxlen=0)
    return specs


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
    document, source = read_stored(url, env_id)
    info = json.loads(document)
    max_turns = info.get("max_turns")
    note_max_turns(url, env_id, max_turns)
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
        allowed_modules=allowed_modules(info.get("domain")),
        reward_range=reward_range,
        class_name=info.get("class_name"),
        render_mode=render_mode,
        sandbox=sandbox,
    )


def read_stored(url: str, env_id: str) -> tuple[str, str]:
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
