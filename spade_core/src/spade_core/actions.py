r"""Action formats: ``\boxed{...}`` commands and ``<tool_call>`` / ``<answer>`` tags.

These are the two formats of the reference implementation. Parsing is tolerant of
surrounding reasoning text (the agent may think before it acts) and strict about the
payload: a tool call whose JSON is malformed raises :class:`ActionFormatError` with the
reason, so environments can report it to the agent instead of crashing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .errors import ActionFormatError
from .locations import json_error

_BOXED = "\\boxed{"


def format_boxed(command: str) -> str:
    r"""Wrap a command as ``\boxed{command}``."""
    return _BOXED + command + "}"


def find_boxed(text: str) -> list[str]:
    r"""Every ``\boxed{...}`` payload in ``text``, in order, with nested braces balanced.

    An unclosed ``\boxed{`` is ignored (it is not an action).
    """
    out: list[str] = []
    start = text.find(_BOXED)
    while start != -1:
        i = start + len(_BOXED)
        depth = 1
        j = i
        while j < len(text):
            ch = text[j]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        if depth != 0:
            break
        out.append(text[i:j])
        start = text.find(_BOXED, j + 1)
    return out


def parse_boxed(text: str, *, last: bool = True) -> str | None:
    r"""The payload of the last (or first) ``\boxed{...}`` in ``text``, stripped; ``None`` if absent.

    The reference agent may box several times while reasoning; the last box is its action.
    """
    found = find_boxed(text)
    if not found:
        return None
    return (found[-1] if last else found[0]).strip()


@dataclass(frozen=True)
class ToolCall:
    """One function call: ``name`` and JSON ``arguments``."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def to_tag(self) -> str:
        payload = json.dumps({"name": self.name, "arguments": self.arguments}, ensure_ascii=False)
        # '<' and '>' only occur inside JSON strings; escaping them keeps a value such as
        # "</tool_call>" from closing the tag early, and decodes to the same value.
        payload = payload.replace("<", "\\u003c").replace(">", "\\u003e")
        return f"<tool_call>{payload}</tool_call>"


@dataclass(frozen=True)
class ToolAction:
    """A parsed tool-use action: zero or more calls and an optional final answer."""

    calls: tuple[ToolCall, ...] = ()
    answer: str | None = None
    text: str = ""


_TOOL_CALL_RE = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def parse_tool_call(payload: str) -> ToolCall:
    """Parse the JSON inside one ``<tool_call>`` tag."""
    try:
        obj = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise ActionFormatError(f"tool call is not valid JSON: {json_error(exc)}") from None
    if not isinstance(obj, dict):
        raise ActionFormatError("tool call must be a JSON object with 'name' and 'arguments'")
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        raise ActionFormatError("tool call has no string 'name'")
    args = obj.get("arguments", {})
    if isinstance(args, str):  # some models double-encode arguments
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            raise ActionFormatError(f"tool call 'arguments' is not valid JSON: {json_error(exc)}") from None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ActionFormatError("tool call 'arguments' must be a JSON object")
    return ToolCall(name=name, arguments=args)


def parse_tool_action(text: str) -> ToolAction:
    """Parse every ``<tool_call>`` and the ``<answer>`` of an agent message.

    Raises :class:`ActionFormatError` on the first malformed call.
    """
    calls = tuple(parse_tool_call(m.strip()) for m in _TOOL_CALL_RE.findall(text))
    answers = _ANSWER_RE.findall(text)
    answer = answers[-1].strip() if answers else None
    return ToolAction(calls=calls, answer=answer, text=text)


def format_tool_calls(calls: list[ToolCall] | tuple[ToolCall, ...], answer: str | None = None) -> str:
    """Render calls (and an answer) in the tag format :func:`parse_tool_action` reads."""
    parts = [c.to_tag() for c in calls]
    if answer is not None:
        parts.append(f"<answer>{answer}</answer>")
    return "\n".join(parts)
