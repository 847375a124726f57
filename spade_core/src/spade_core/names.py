"""Names, formats and content addresses shared by the light import path (plugins,
registration, the sandbox) and the metadata models. Kept free of pydantic so that
``import spade_core`` and ``gymnasium.make`` stay cheap; :mod:`spade_core.metadata`
re-exports them."""

from __future__ import annotations

import hashlib
import re
from enum import StrEnum

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
