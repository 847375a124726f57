"""One validated configuration object, loaded from ``spade.toml`` and overridden by flags.

Lookup order for the file: an explicit path, ``./spade.toml``, ``$SPADE_HOME/spade.toml``.
``SPADE_HOME`` (default ``~/.spade``) holds the default store. Other packages keep their
own sections (``[designer]``, ``[selfplay]``...): each plugin declares the tables it owns
and their models (``spade_register_config_sections``), a command validates the whole file
once at its edge (``SpadePlugins.check_config``, from ``spade_core.app.cli.command_config``),
and :meth:`SpadeConfig.settings` hands the validated table back (:meth:`SpadeConfig.section`,
the raw one). The file is parsed by
:func:`spade_core.config_file.read_config_file`, its one reader; this module validates.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

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

    #: Where the values came from (the file, or "defaults"), for error messages.
    _origin: str = PrivateAttr(default="defaults")
    #: The tables validated by their owners' models (``SpadePlugins.check_config``).
    _settings: dict[str, Any] = PrivateAttr(default_factory=dict)

    @property
    def origin(self) -> str:
        return self._origin

    def section(self, name: str) -> dict[str, Any]:
        """The raw table ``[name]`` as written (empty when absent)."""
        return dict(self.sections.get(name, {}))

    def settings(self, name: str) -> Any | None:
        """The table ``[name]`` as its owner's model validated it at the command's edge
        (``SpadePlugins.check_config``); ``None`` when the file has no such table or the
        configuration was not checked (then owners validate :meth:`section` themselves)."""
        return self._settings.get(name)

    def keep_settings(self, typed: dict[str, Any]) -> None:
        """Keep the validated tables (called by ``SpadePlugins.check_config``)."""
        self._settings = dict(typed)


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
        config = SpadeConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc, origin)) from None
    config._origin = origin
    return config
