"""Names, formats, content addresses and the lifecycle shared by the light import path
(plugins, registration, the sandbox) and the metadata models. Kept free of pydantic so that
``import spade_core`` and ``gymnasium.make`` stay cheap; :mod:`spade_core.metadata`
re-exports them (import them from there), and :mod:`spade_core._metadata_models` builds on
them without importing :mod:`spade_core.metadata` back."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Final

#: The metadata schema's version: bump it on any incompatible change of
#: :class:`~spade_core.metadata.EnvMetadata` and add a migration in the store.
SCHEMA_VERSION: Final = 1


def utcnow() -> datetime:
    """The current time, timezone-aware (UTC): what metadata timestamps hold."""
    return datetime.now(UTC)


class EnvStatus(StrEnum):
    """Lifecycle: candidate -> admitted -> retired (candidate -> retired for rejects)."""

    candidate = "candidate"
    admitted = "admitted"
    retired = "retired"


#: Allowed status transitions (from -> set of to).
TRANSITIONS: dict[EnvStatus, frozenset[EnvStatus]] = {
    EnvStatus.candidate: frozenset({EnvStatus.admitted, EnvStatus.retired}),
    EnvStatus.admitted: frozenset({EnvStatus.retired}),
    EnvStatus.retired: frozenset({EnvStatus.admitted}),
}

#: Environment names become part of a Gymnasium id ``spade/<name>-v<N>``.
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.]*$")


class ActionFormat(StrEnum):
    """How the agent writes an action: ``\\boxed{...}``, tool-call tags, or free text."""

    boxed = "boxed"
    tool_call = "tool_call"
    free_text = "free_text"


def code_hash(source: str) -> str:
    """Content address of environment code: sha256 of the UTF-8 source, line endings normalised."""
    normalised = source.replace("\r\n", "\n").replace("\r", "\n")
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()
