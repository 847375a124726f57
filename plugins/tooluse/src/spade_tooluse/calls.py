"""Tool calls and what the agent sees of them: reference calls (:func:`call`, and the forms
:func:`as_call` accepts), a call's :class:`Outcome`, a result as rendered in a
``<tool_response>``, the check that an answer contains a required output, and the errors
a tool or an environment raises.

Shared by the base class's dispatch, its grading (:mod:`spade_tooluse.targets`) and the
plain-grading reference (:mod:`spade_tooluse.plain_grading`). Standard library and
``spade_core`` only (loaded in the sandbox with :mod:`spade_tooluse.base`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from spade_core.actions import ToolCall
from spade_core.errors import SpadeError

#: Longest tool result shown to the agent, in characters (keeps observations bounded).
MAX_RESULT_CHARS = 4000


class ToolError(Exception):
    """Raised by a tool for an expected failure; the agent sees ``str(error)``.

    A tool that raises must leave ``self.state`` unchanged.
    """


class ToolEnvError(SpadeError):
    """A tool-use environment is inconsistent at ``reset`` (state not JSON, a reference
    call that crashes, a reference solution failing its own turn checks)."""


def call(tool: str, /, **arguments: Any) -> ToolCall:
    """A reference call for a :class:`Turn`: ``call("transfer", src="a", amount=5)``."""
    return ToolCall(name=tool, arguments=arguments)


def canonical(value: Any) -> Any:
    """A JSON round trip: tuples become lists, keys strings; raises TypeError if impossible."""
    return json.loads(json.dumps(value, sort_keys=True))


def render_result(value: Any) -> Any:
    """A tool's result as shown to the agent: JSON values pass through, anything else
    becomes its ``str``; results longer than :data:`MAX_RESULT_CHARS` are cut."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        value = str(value)
        text = json.dumps(value, ensure_ascii=False)
    if len(text) > MAX_RESULT_CHARS:
        return text[:MAX_RESULT_CHARS] + f"... [truncated {len(text) - MAX_RESULT_CHARS} chars]"
    return value


def tool_response(name: str, content: Any, *, error: bool = False) -> str:
    """``<tool_response>{"name": .., "content"|"error": ..}</tool_response>``."""
    payload = {"name": name, ("error" if error else "content"): content}
    return "<tool_response>" + json.dumps(payload, ensure_ascii=False, sort_keys=False) + "</tool_response>"


def output_found(output: str, text: str) -> bool:
    """Whether ``output`` appears in ``text``, ignoring case and runs of whitespace; an
    output that starts or ends with a letter or digit must not continue a longer word or
    number there ("3" is not found in "13")."""
    needle = r"\s+".join(re.escape(w) for w in output.split())
    if not needle:
        return True
    left = r"(?<![0-9A-Za-z])" if output.strip()[0].isalnum() else ""
    right = r"(?![0-9A-Za-z])" if output.strip()[-1].isalnum() else ""
    return re.search(left + needle + right, text, flags=re.IGNORECASE) is not None


def as_call(raw: Any) -> ToolCall:
    if isinstance(raw, ToolCall):
        return raw
    if isinstance(raw, dict) and isinstance(raw.get("name"), str):
        return ToolCall(raw["name"], dict(raw.get("arguments") or {}))
    if isinstance(raw, (tuple, list)) and len(raw) == 2 and isinstance(raw[0], str) and isinstance(raw[1], dict):
        return ToolCall(raw[0], dict(raw[1]))
    raise ToolEnvError(f"reference call {raw!r} is not call(name, **arguments), a (name, arguments) pair or a dict")


@dataclass
class Outcome:
    """What happened to one call: shown to the agent and recorded in ``info``."""

    name: str
    #: The result value (JSON) or the error message.
    text: Any
    #: "ok", "tool_error" (the tool refused), "bad_call" (unknown tool, bad arguments) or
    #: "internal" (the tool crashed).
    kind: str = "ok"

    @property
    def error(self) -> bool:
        return self.kind != "ok"
