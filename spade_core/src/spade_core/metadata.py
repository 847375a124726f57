"""Environment metadata: the versioned, validated record stored with every environment.

The JSON Schema of :class:`EnvMetadata` (``spade_core.metadata.json_schema()``) is the
published contract; bump :data:`SCHEMA_VERSION` on any incompatible change and add a
migration in the store.

The pydantic models (``EnvMetadata``, ``ValidationReport``, ``Finding``, ``StatsSnapshot``,
``DocumentRef``) and ``json_schema`` are defined in :mod:`spade_core._metadata_models` and
loaded on first access here; ``ActionFormat``, ``NAME_RE``, ``code_hash``, ``EnvStatus``,
``TRANSITIONS`` and ``SCHEMA_VERSION`` import no pydantic, so the modules ``import
spade_core`` loads (plugins included) may use them freely.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# Defined in spade_core.names (pydantic-free, for the light import path); re-exported here.
from .names import NAME_RE as NAME_RE
from .names import SCHEMA_VERSION as SCHEMA_VERSION
from .names import TRANSITIONS as TRANSITIONS
from .names import ActionFormat as ActionFormat
from .names import EnvStatus as EnvStatus
from .names import code_hash as code_hash
from .names import utcnow as utcnow

if TYPE_CHECKING:
    from ._metadata_models import (
        DocumentRef,
        EnvEdit,
        EnvMetadata,
        Finding,
        Learnability,
        StatsSnapshot,
        ValidationReport,
        json_schema,
    )

_MODELS = frozenset(
    {"DocumentRef", "EnvEdit", "EnvMetadata", "Finding", "Learnability", "StatsSnapshot", "ValidationReport",
     "json_schema"}
)

__all__ = [
    "NAME_RE",
    "SCHEMA_VERSION",
    "TRANSITIONS",
    "ActionFormat",
    "DocumentRef",
    "EnvEdit",
    "EnvMetadata",
    "EnvStatus",
    "Finding",
    "Learnability",
    "StatsSnapshot",
    "ValidationReport",
    "code_hash",
    "identity",
    "json_schema",
    "utcnow",
]


def identity(meta: EnvMetadata) -> dict[str, Any]:
    """What names an environment and where it belongs (``id``, ``name``, ``version``,
    ``domain``, ``skill``), in that order: how every row, table and summary of one begins
    (a store row, a Hub row, a Harbor task's ``[metadata.spade]``)."""
    return {"id": meta.id, "name": meta.name, "version": meta.version, "domain": meta.domain, "skill": meta.skill}


def __getattr__(name: str) -> Any:
    if name not in _MODELS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module("._metadata_models", __package__), name)
    globals()[name] = value
    return value
