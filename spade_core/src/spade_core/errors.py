"""Exception types of spade_core.

Every error a user can cause carries what they need to act: the file, the id, the field.
"""

from __future__ import annotations

from typing import Any


class SpadeError(Exception):
    """Base class of every error SPADE raises on purpose."""


class ActionFormatError(SpadeError, ValueError):
    """An action string does not follow the environment's action format."""


class EnvContractError(SpadeError):
    """An environment broke the reset/step/solution/close contract.

    ``method`` names the call that misbehaved; the message says how.
    """

    def __init__(self, message: str, *, method: str | None = None) -> None:
        super().__init__(message)
        self.method = method


class EnvLoadError(SpadeError):
    """Environment source could not be turned into an environment class."""

    def __init__(self, message: str, *, source_name: str | None = None) -> None:
        prefix = f"{source_name}: " if source_name else ""
        super().__init__(prefix + message)
        self.source_name = source_name


class UntrustedCodeError(SpadeError):
    """Refused to run untrusted (store) code outside the sandbox."""


class StoreError(SpadeError):
    """The environment store failed; the message names the database."""


class EnvNotFound(StoreError, KeyError):
    """No environment with this id, name or hash."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "environment not found"


class InvalidTransition(StoreError):
    """A status change the lifecycle does not allow (e.g. retired -> admitted)."""


class ConfigError(SpadeError):
    """Configuration is invalid; the message lists every bad field."""


class PluginError(SpadeError):
    """A plugin failed to load or registered something invalid."""


def field_errors(exc: Any, *, prefix: str = "", root: str = "(root)", suffix: str = "") -> list[str]:
    """One line per problem of a pydantic ``ValidationError`` ``exc``: ``{prefix}{field}:
    {message}{suffix}``, the field being the problem's dotted location (``root`` when it has
    none): how every configuration table, plugin option and imported row names a bad field."""
    return [f"{prefix}{'.'.join(str(p) for p in e['loc']) or root}: {e['msg']}{suffix}" for e in exc.errors()]
