"""The environment store (see :mod:`spade_core.store.env_store` for its contracts).

``EnvStore`` is loaded on first use: the registry imports :mod:`.layout` on the
``import spade_core`` path without paying for SQLAlchemy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .layout import STORE_SCHEMA_VERSION

if TYPE_CHECKING:
    from .env_store import EnvStore

__all__ = ["STORE_SCHEMA_VERSION", "EnvStore"]


def __getattr__(name: str) -> Any:
    if name == "EnvStore":
        from .env_store import EnvStore

        return EnvStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
