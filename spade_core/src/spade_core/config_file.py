"""Reading ``spade.toml``: the one place the file is parsed, with the standard library only.

:func:`read_config_file` turns the file into its tables (``[spade]`` and the sections other
packages own: ``[designer]``, ``[validation]``, ``[selfplay]``...) and reports a file that is
not one (unreadable, not TOML, ``[spade]`` not a table, a key outside any table) as a
:class:`~spade_core.errors.ConfigError` naming it. :func:`~spade_core.config.load_config`
validates the tables with the pydantic models; ``spade_trainer``'s ``load_selfplay_config``
takes its ``[selfplay]`` table from here, and :func:`spade_core.run_settings.run_settings`
vouches for the tables without pydantic where it can. This module imports none of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .paths import expand_user


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


def merge_tables(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` laid on ``base`` key by key, nested tables merged (neither is changed): how
    every layered table is combined (presets, files and ``--set`` of a run, a command's
    profile beneath ``[designer]``, a run's ``[selfplay.designer]`` over ``[designer]``)."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merge_tables(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out
