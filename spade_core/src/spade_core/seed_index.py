"""What the plugins gave ``import spade_core`` last time, kept so the next interpreter need
not load them: the seed environments to register, each domain's allowed modules and the
runners of store code (:mod:`spade_core.runners`); and what this process answers from it
while the plugins are not loaded (:func:`env_runner`, :func:`allowed_modules`).

Loading the plugins costs a fresh interpreter about 0.08 s (``importlib.metadata`` to find
the entry points, pluggy, every plugin package), more than registering 100,000 store
environments' worth of Gymnasium specs costs in CPU on some machines. The index is a cache,
never a source of truth:

* it is used only by the registration that ``import spade_core`` does, and only while
  the process-wide plugin set is not loaded (a program that registers plugins itself
  gets them, through :func:`spade_core.registry.register`);
* it is valid only for the same Python, ``sys.path``, ``SPADE_PLUGINS`` and spade-core
  version, and only while every file it depends on has the size and modification time it
  had: each ``sys.path`` directory (installing or removing a distribution changes its
  entries), every module file of the plugin packages and of spade-core, and every seed
  file and the folder it is in (a plugin that globs its seed folder sees new files);
* it is written only after a registration without problems, only when ``SPADE_HOME``
  exists (importing never creates it), atomically, and any failure to read or write it
  just means the plugins are loaded as before;
* ``SPADE_SEED_INDEX=0`` turns it off.

File ``SPADE_HOME/cache/seed-index.json``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .runners import EnvRunner

FORMAT = 3  # 2: the env runners are kept too; 3: each seed's reward range
DISABLE_VAR = "SPADE_SEED_INDEX"
PLUGINS_VAR = "SPADE_PLUGINS"


def index_file(home: str) -> str:
    return os.path.join(home, "cache", "seed-index.json")


def _home() -> str:
    from .paths import spade_home  # the one home of SPADE_HOME's default

    return str(spade_home())


def enabled() -> bool:
    return os.environ.get(DISABLE_VAR, "1").strip().lower() not in ("0", "false", "no", "off")


def _key() -> dict[str, Any]:
    from ._version import __version__

    return {
        "format": FORMAT,
        "core": __version__,
        "python": sys.version,
        "executable": sys.executable,
        # The script's own directory (``''`` or ``sys.path[0]``) is left out: it changes
        # with every working directory, and a plugin shadowed from there is not a case
        # worth missing the index for.
        "path": sys.path[1:],
        "plugins": os.environ.get(PLUGINS_VAR),
    }


def _stamp(path: str) -> list[Any] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def load() -> dict[str, Any] | None:
    """``{"seeds": [...], "allowed_modules": {domain: [...]}, "runners": {name: EnvRunner}}``
    when the index exists and is still valid, else ``None``."""
    if not enabled():
        return None
    try:
        with open(index_file(_home()), encoding="utf-8") as f:
            data = json.load(f)
        if data["key"] != _key():
            return None
        for path, stamp in data["depends"]:
            if _stamp(path) != stamp:
                return None
        seeds, allowed = data["seeds"], data["allowed_modules"]
        if not (isinstance(seeds, list) and all(map(_is_seed, seeds)) and _is_allowed(allowed)):
            return None
        from .runners import EnvRunner, by_name

        runners = by_name(map(EnvRunner.from_json, data["runners"]))
        return {"seeds": seeds, "allowed_modules": allowed, "runners": runners}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _is_seed(seed: Any) -> bool:
    return (
        isinstance(seed, dict)
        and all(isinstance(seed.get(k), str) for k in ("gym_id", "path", "domain"))
        and (seed.get("class_name") is None or isinstance(seed["class_name"], str))
        and type(seed.get("max_turns")) is int
        and isinstance(seed.get("reward_range"), list)
        and len(seed["reward_range"]) == 2
        and all(type(x) in (int, float) for x in seed["reward_range"])
    )


def _is_allowed(allowed: Any) -> bool:
    return isinstance(allowed, dict) and all(
        isinstance(k, str) and isinstance(v, list) and all(isinstance(m, str) for m in v) for k, v in allowed.items()
    )


def _plugin_module_files(plugin_modules: list[str]) -> list[str]:
    """The files of every imported module of the plugins' top-level packages and of
    spade_core: the code that decided what the plugins registered."""
    packages = {name.partition(".")[0] for name in plugin_modules} | {"spade_core"}
    files = []
    for name, module in list(sys.modules.items()):
        if name.partition(".")[0] in packages:
            file = getattr(module, "__file__", None)
            if isinstance(file, str):
                files.append(file)
    return files


def save(
    seeds: list[dict[str, Any]],
    allowed_modules: dict[str, list[str]],
    plugin_modules: list[str],
    runners: list[dict[str, str | None]] | None = None,
) -> None:
    """Write the index (see the module docstring for when it is written); ``runners`` are
    :meth:`EnvRunner.to_json <spade_core.runners.EnvRunner.to_json>` records."""
    if not enabled():
        return
    home = _home()
    if not os.path.isdir(home):
        return
    depends = [p for p in sys.path[1:] if p and os.path.isdir(p)]
    depends += _plugin_module_files(plugin_modules)
    for seed in seeds:  # the folder too: a seed added beside the others changes its mtime
        depends += [seed["path"], os.path.dirname(seed["path"])]
    stamped = []
    for path in dict.fromkeys(depends):
        stamp = _stamp(path)
        if stamp is None:
            return  # a file that vanished already: nothing sound to remember
        stamped.append([path, stamp])
    data = {
        "key": _key(),
        "depends": stamped,
        "seeds": seeds,
        "allowed_modules": allowed_modules,
        "runners": runners or [],
    }
    target = index_file(home)
    tmp = f"{target}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f)
        os.replace(tmp, target)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def plugins_loaded() -> bool:
    """Whether the process-wide plugin set is loaded (without importing pluggy to ask)."""
    module = sys.modules.get(f"{__package__}.plugins")
    return module is not None and getattr(module, "_plugins", None) is not None


#: Allowed modules per domain and the env runners, from the seed index while the plugins
#: are not loaded (:func:`remember`).
_indexed_allowed_modules: dict[str, list[str]] | None = None
_indexed_runners: dict[str, EnvRunner] | None = None


def remember(indexed: dict[str, Any]) -> None:
    """Answer :func:`env_runner` and :func:`allowed_modules` from ``indexed`` (what
    :func:`load` returned, its seeds registered) while the plugins are not loaded."""
    global _indexed_allowed_modules, _indexed_runners
    _indexed_allowed_modules = indexed["allowed_modules"]
    _indexed_runners = indexed["runners"]


def env_runner(name: str) -> EnvRunner | None:
    """The env runner registered as ``name`` (:mod:`spade_core.runners`), or ``None``: from
    the seed index while the plugins are not loaded (no plugin is imported), else from the
    process-wide plugin set."""
    if _indexed_runners is not None and not plugins_loaded():
        return _indexed_runners.get(name)
    from .plugins import get_plugins

    return get_plugins().env_runners().get(name)


def allowed_modules(domain: str | None) -> tuple[str, ...]:
    """The modules environments of ``domain`` may import: from the seed index while the
    plugins are not loaded, else from the process-wide plugin set (none for an unknown or
    empty domain)."""
    if not domain:
        return ()
    if _indexed_allowed_modules is not None and not plugins_loaded():
        return tuple(_indexed_allowed_modules.get(domain, ()))
    from .plugins import get_plugins

    found = get_plugins().domains().get(domain)
    return tuple(sorted(found.allowed_modules)) if found is not None else ()
