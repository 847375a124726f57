"""The settings registration and ``gymnasium.make`` need, read without pydantic.

``import spade_core`` needs the active store's URL and ``gymnasium.make`` of a stored
environment needs ``store_envs_run``; loading :class:`~spade_core.config.SpadeConfig`
for them would import pydantic (about a fifth of the import's budget) in every fresh
interpreter. :func:`run_settings` gives the same answer as :func:`~spade_core.config.load_config`
for configurations it can check completely with the standard library (no file, or a
``[spade]`` table holding only ``home``, ``store_url``, ``store_envs_run``, ``plugins``
and a ``sandbox`` table, with values of the right types) and hands every other file to
``load_config``, so a configuration error is reported exactly as before, with its
field-level messages. The file is parsed by :func:`~spade_core.config_file.read_config_file`,
as ``load_config`` parses it. The ``[spade.sandbox]`` table it gives
(:attr:`RunSettings.sandbox`, a :class:`~spade_core.sandbox_settings.SandboxSettings`)
is what ``gymnasium.make`` of a stored environment runs under.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .config_file import ConfigFile, read_config_file
from .errors import ConfigError
from .paths import default_store_url, find_config_file
from .sandbox_settings import InvalidSandboxSettings, SandboxSettings

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
    #: ``SpadeConfig.sandbox``: the ``[spade.sandbox]`` table.
    sandbox: SandboxSettings = SandboxSettings()

    @property
    def sandbox_defaults(self) -> bool:
        """Whether ``[spade.sandbox]`` keeps every default (true whenever it is absent)."""
        return self.sandbox == SandboxSettings()


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
    try:
        sandbox = SandboxSettings.from_table(config.spade.get("sandbox", {}))
    except (InvalidSandboxSettings, TypeError):
        return _validated(path)  # the model's messages (and its lax conversions)
    home = config.home()
    return RunSettings(
        config.spade.get("store_url") or default_store_url(None if home is None else Path(home)),
        config.spade.get("store_envs_run", "sandbox"),
        sandbox,
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
        elif key == "sandbox":
            if not isinstance(value, dict):
                return None
        else:
            return None
    if config.spade.get("store_envs_run", "sandbox") not in RUN_MODES:
        return None
    return config


def _validated(path: str | Path | None) -> RunSettings:
    from .config import load_config

    config = load_config(path)
    return RunSettings(config.resolved_store_url, config.store_envs_run, config.sandbox)
