"""The settings registration and ``gymnasium.make`` need, read without pydantic.

``import spade_core`` needs the active store's URL and ``gymnasium.make`` of a stored
environment needs ``store_envs_run``; loading :class:`~spade_core.config.SpadeConfig`
for them would import pydantic (about a fifth of the import's budget) in every fresh
interpreter. :func:`run_settings` gives the same answer as :func:`~spade_core.config.load_config`
for configurations it can check completely with the standard library (no file, or a
``[spade]`` table holding only ``home``, ``store_url``, ``store_envs_run`` and ``plugins``
with values of the right types) and hands every other file to ``load_config``, so a
configuration error is reported exactly as before, with its field-level messages.

It is the configuration's light reader, the only one besides ``load_config``: the sandbox
asks it whether ``[spade.sandbox]`` keeps its defaults (:attr:`RunSettings.sandbox_defaults`)
instead of parsing ``spade.toml`` itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .paths import default_store_url, expand_user, find_config_file

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
    table = _checkable_table(file)
    if table is None:
        return _validated(path)
    home = table.get("home")
    if home is None:
        home_path = None
    elif expand_user(home, "spade.home").is_absolute():
        home_path = Path(home)
    else:  # relative to the config file, as load_config resolves it
        home_path = file.parent / home
    return RunSettings(
        table.get("store_url") or default_store_url(home_path),
        table.get("store_envs_run", "sandbox"),
    )


def _checkable_table(file: Path) -> dict[str, Any] | None:
    """The ``[spade]`` table when every value in the file is one this module can vouch
    for; ``None`` when anything needs the full model (or the file is unreadable)."""
    import tomllib  # only when there is a file: 5 ms of every import otherwise

    try:
        raw = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    table = raw.pop("spade", {})
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in raw.values()):
        return None
    for key, value in table.items():
        if key in _STRING_KEYS:
            if not isinstance(value, str):
                return None
        elif key == "plugins":
            if not (isinstance(value, list) and all(isinstance(p, str) for p in value)):
                return None
        else:
            return None
    if table.get("store_envs_run", "sandbox") not in RUN_MODES:
        return None
    return table


def _validated(path: str | Path | None) -> RunSettings:
    from .config import SandboxSettings, load_config

    config = load_config(path)
    return RunSettings(config.resolved_store_url, config.store_envs_run, config.sandbox == SandboxSettings())
