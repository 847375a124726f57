"""Where SPADE keeps things: ``SPADE_HOME``, the config file, the default store.

Pydantic-free, so registration at ``import spade_core`` can find the active store without
loading the config models when there is no config file (the common case).
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ConfigError

CONFIG_FILE_NAME = "spade.toml"


def spade_home() -> Path:
    """``$SPADE_HOME``, default ``~/.spade``."""
    return Path(os.environ.get("SPADE_HOME") or Path.home() / ".spade").expanduser()


def default_store_url(home: Path | None = None) -> str:
    """The embedded default store: ``sqlite:///<home>/store.db``."""
    return f"sqlite:///{(home if home is not None else spade_home()) / 'store.db'}"


def find_config_file(path: str | Path | None = None) -> Path | None:
    """An explicit path (must exist), else ``./spade.toml``, else ``$SPADE_HOME/spade.toml``."""
    if path is not None:
        p = Path(path).expanduser()
        if not p.is_file():
            raise ConfigError(f"config file {p} does not exist")
        return p
    for candidate in (Path.cwd() / CONFIG_FILE_NAME, spade_home() / CONFIG_FILE_NAME):
        if candidate.is_file():
            return candidate
    return None
