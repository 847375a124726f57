"""Names and formats shared by the light import path (plugins, registration) and the
metadata models. Kept free of pydantic so that ``import spade_core`` and plugin loading
stay cheap; :mod:`spade_core.metadata` re-exports both."""

from __future__ import annotations

import re
from enum import StrEnum

#: Environment names become part of a Gymnasium id ``spade/<name>-v<N>``.
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.]*$")


class ActionFormat(StrEnum):
    """How the agent writes an action: ``\\boxed{...}``, tool-call tags, or free text."""

    boxed = "boxed"
    tool_call = "tool_call"
    free_text = "free_text"
