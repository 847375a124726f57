"""Where SPADE keeps things: ``SPADE_HOME``, the config file, the default store.

Pydantic-free, so registration at ``import spade_core`` can find the active store without
loading the config models when there is no config file (the common case).
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ConfigError

CONFIG_FILE_NAME = "spade.toml"


def expand_user(path: str | Path, what: str) -> Path:
    """``path`` with a leading ``~`` / ``~user`` expanded; a :class:`ConfigError` naming
    ``what`` (e.g. ``spade.home``) when it cannot be (no such user, no home directory)."""
    try:
        return Path(path).expanduser()
    except RuntimeError as exc:  # pathlib's answer to an unknown ~user
        raise ConfigError(f"{what} = {str(path)!r}: cannot expand '~' ({exc})") from None


def spade_home() -> Path:
    """``$SPADE_HOME``, default ``~/.spade``: the one place this default is written."""
    return expand_user(os.environ.get("SPADE_HOME") or Path.home() / ".spade", "SPADE_HOME")


def default_store_url(home: Path | None = None) -> str:
    """The embedded default store: ``sqlite:///<home>/store.db``."""
    return f"sqlite:///{(home if home is not None else spade_home()) / 'store.db'}"


def find_config_file(path: str | Path | None = None) -> Path | None:
    """An explicit path (must exist), else ``./spade.toml``, else ``$SPADE_HOME/spade.toml``."""
    if path is not None:
        p = expand_user(path, "config file")
        if not p.is_file():
            raise ConfigError(f"config file {p} does not exist")
        return p
    for candidate in (Path.cwd() / CONFIG_FILE_NAME, spade_home() / CONFIG_FILE_NAME):
        if candidate.is_file():
            return candidate
    return None
