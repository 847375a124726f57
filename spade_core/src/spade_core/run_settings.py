"""The settings registration and ``gymnasium.make`` need, read without pydantic.

``import spade_core`` needs the active store's URL and ``gymnasium.make`` of a stored
environment needs ``store_envs_run``; loading :class:`~spade_core.config.SpadeConfig`
for them would import pydantic (about a fifth of the import's budget) in every fresh
interpreter. :func:`run_settings` gives the same answer as :func:`~spade_core.config.load_config`
for configurations it can check completely with the standard library (no file, or a
``[spade]`` table holding only ``home``, ``store_url``, ``store_envs_run`` and ``plugins``
with values of the right types) and hands every other file to ``load_config``, so a
configuration error is reported exactly as before, with its field-level messages. The
file is parsed by :func:`~spade_core.config_file.read_config_file`, as ``load_config``
parses it. The sandbox asks it whether ``[spade.sandbox]`` keeps its defaults
(:attr:`RunSettings.sandbox_defaults`) instead of parsing ``spade.toml`` itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .config_file import ConfigFile, read_config_file
from .errors import ConfigError
from .paths import default_store_url, find_config_file

#: Values of ``store_envs_run`` (the ``Literal`` of ``SpadeConfig.store_envs_run``).
RUN_MODES = ("sandbox", "in-process")
_STRING_KEYS = frozenset({"home", "store_url", "store_envs_run"})


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
