"""One validated configuration object, loaded from ``spade.toml`` and overridden by flags.

Lookup order for the file: an explicit path, ``./spade.toml``, ``$SPADE_HOME/spade.toml``.
``SPADE_HOME`` (default ``~/.spade``) holds the default store. Other packages keep their
own sections (``[designer]``, ``[selfplay]``...) and validate them with their own models;
:meth:`SpadeConfig.section` hands them the raw table. The file is parsed by
:func:`spade_core.config_file.read_config_file`, its one reader; this module validates.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .config_file import read_config_file
from .errors import ConfigError
from .paths import default_store_url, find_config_file, spade_home
from .sandbox_settings import InvalidSandboxSettings, SandboxSettings

__all__ = ["SandboxSettings", "SpadeConfig", "default_store_url", "find_config_file", "load_config", "spade_home"]


class SpadeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    home: Path = Field(default_factory=spade_home)
    #: SQLAlchemy URL of the environment store; default ``sqlite:///<home>/store.db``.
    store_url: str | None = None
    #: Entry-point names of plugins to load (``None`` = all installed).
    plugins: list[str] | None = None
    #: How ``gymnasium.make`` runs environments from the store.
    store_envs_run: Literal["sandbox", "in-process"] = "sandbox"
    #: ``[spade.sandbox]`` (:mod:`spade_core.sandbox_settings`).
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    #: Raw tables for other packages (``[designer]``, ``[selfplay]``...).
    sections: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @property
    def resolved_store_url(self) -> str:
        if self.store_url:
            return self.store_url
        return default_store_url(self.home)

    def section(self, name: str) -> dict[str, Any]:
        return dict(self.sections.get(name, {}))


def _format_errors(exc: ValidationError, origin: str) -> str:
    """One line per bad field, named as it is written in ``spade.toml`` (``spade.<key>``)."""
    lines = [f"invalid configuration in {origin}:"]
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        cause = err.get("ctx", {}).get("error")
        if isinstance(cause, InvalidSandboxSettings):  # the settings type checks its own fields
            lines += [f"  spade.{loc}.{name}: {msg}" for name, msg in cause.problems]
            continue
        got = f" (got {err['input']!r})" if err["type"] != "missing" and not isinstance(err["input"], dict) else ""
        lines.append(f"  spade.{loc}: {err['msg']}{got}")
    return "\n".join(lines)


def load_config(path: str | Path | None = None, **overrides: Any) -> SpadeConfig:
    """Load and validate the configuration; ``overrides`` (flags) win over the file."""
    file = find_config_file(path)
    data: dict[str, Any] = {}
    origin = "defaults"
    if file is not None:
        origin = str(file)
        tables = read_config_file(file)
        data.update(tables.spade)
        if "home" in tables.spade:
            data["home"] = tables.home()
        data["sections"] = tables.sections
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return SpadeConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc, origin)) from None
