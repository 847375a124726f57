"""Reading ``spade.toml``: the one place the file is parsed, with the standard library only.

:func:`read_config_file` turns the file into its tables (``[spade]`` and the sections other
packages own: ``[designer]``, ``[validation]``, ``[selfplay]``...) and reports a file that is
not one (unreadable, not TOML, ``[spade]`` not a table, a key outside any table) as a
:class:`~spade_core.errors.ConfigError` naming it. :func:`~spade_core.config.load_config`
validates the tables with the pydantic models; ``spade_trainer``'s ``load_selfplay_config``
takes its ``[selfplay]`` table from here.

``import spade_core`` needs the active store's URL and ``gymnasium.make`` of a stored
environment needs ``store_envs_run``; loading :class:`~spade_core.config.SpadeConfig`
for them would import pydantic (about a fifth of the import's budget) in every fresh
interpreter. :func:`run_settings` gives the same answer as :func:`~spade_core.config.load_config`
for configurations it can check completely with the standard library (no file, or a
``[spade]`` table holding only ``home``, ``store_url``, ``store_envs_run`` and ``plugins``
with values of the right types) and hands every other file to ``load_config``, so a
configuration error is reported exactly as before, with its field-level messages. The
sandbox asks it whether ``[spade.sandbox]`` keeps its defaults
(:attr:`RunSettings.sandbox_defaults`) instead of parsing ``spade.toml`` itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .paths import default_store_url, expand_user, find_config_file

#: Values of ``store_envs_run`` (the ``Literal`` of ``SpadeConfig.store_envs_run``).
RUN_MODES = ("sandbox", "in-process")
_STRING_KEYS = frozenset({"home", "store_url", "store_envs_run"})


@dataclass(frozen=True)
class ConfigFile:
    """The tables of one ``spade.toml``, not yet validated."""

    path: Path
    #: The ``[spade]`` table (empty when the file has none).
    spade: dict[str, Any]
    #: Every other top-level table, by name (``designer``, ``validation``, ``selfplay``...).
    sections: dict[str, dict[str, Any]]

    def home(self) -> Any:
        """``[spade].home`` as ``load_config`` takes it: a relative path means "next to this
        file", not "wherever the command happens to run"; ``None`` when unset; a value of
        another type is returned as written, for the model to reject."""
        home = self.spade.get("home")
        if isinstance(home, str) and not expand_user(home, "spade.home").is_absolute():
            return self.path.parent / home
        return home


def read_config_file(path: str | Path) -> ConfigFile:
    """Parse the configuration file ``path``. Raises :class:`ConfigError` naming the file
    when it does not exist or cannot be read, is not UTF-8 TOML, has a ``[spade]`` that is not a table or a
    top-level key outside every table."""
    import tomllib  # only when there is a file: 5 ms of every import otherwise

    file = expand_user(path, "config file")
    try:
        raw = tomllib.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {file} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read the configuration file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: not valid TOML: {exc}") from None
    table = raw.pop("spade", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{file}: [spade] must be a table")
    stray = [k for k, v in raw.items() if not isinstance(v, dict)]
    if stray:
        raise ConfigError(f"{file}: top-level keys must live in a table such as [spade]: {', '.join(stray)}")
    return ConfigFile(file, table, raw)


@dataclass(frozen=True)
class RunSettings:
    """What registration and ``gymnasium.make`` of a stored environment read."""

    #: ``SpadeConfig.resolved_store_url``.
    store_url: str
    #: ``SpadeConfig.store_envs_run``: ``"sandbox"`` or ``"in-process"``.
    store_envs_run: str
    #: Whether ``SpadeConfig.sandbox`` equals the defaults of ``SandboxSettings`` (true
    #: whenever ``[spade.sandbox]`` is absent): a default sandbox pool then needs no model.
    sandbox_defaults: bool = True


def run_settings(path: str | Path | None = None) -> RunSettings:
    """The active settings (same lookup as ``load_config(path)``).

    Raises :class:`~spade_core.errors.ConfigError` for an invalid configuration (through
    ``load_config``, which produces the message).
    """
    file = find_config_file(path)
    if file is None:
        return RunSettings(default_store_url(), "sandbox")
    config = _checkable(file)
    if config is None:
        return _validated(path)
    home = config.home()
    return RunSettings(
        config.spade.get("store_url") or default_store_url(None if home is None else Path(home)),
        config.spade.get("store_envs_run", "sandbox"),
    )


def _checkable(file: Path) -> ConfigFile | None:
    """The file's tables when every value of ``[spade]`` is one this module can vouch for;
    ``None`` when anything needs the full model (or the file is not a configuration file:
    ``load_config`` then reports it)."""
    try:
        config = read_config_file(file)
    except ConfigError:
        return None
    for key, value in config.spade.items():
        if key in _STRING_KEYS:
            if not isinstance(value, str):
                return None
        elif key == "plugins":
            if not (isinstance(value, list) and all(isinstance(p, str) for p in value)):
                return None
        else:
            return None
    if config.spade.get("store_envs_run", "sandbox") not in RUN_MODES:
        return None
    return config


def _validated(path: str | Path | None) -> RunSettings:
    from .config import SandboxSettings, load_config

    config = load_config(path)
    return RunSettings(config.resolved_store_url, config.store_envs_run, config.sandbox == SandboxSettings())
