r"""Action formats: ``\boxed{...}`` commands and ``<tool_call>`` / ``<answer>`` tags.

These are the two formats of the reference implementation. Parsing is tolerant of
surrounding reasoning text (the agent may think before it acts) and strict about the
payload: a tool call whose JSON is malformed raises :class:`ActionFormatError` with the
reason, so environments can report it to the agent instead of crashing.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from .answers import MAX_NUMBER_CHARS
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


def tag_spans(text: str, tag: str) -> list[tuple[int, int]]:
    """Where each ``<tag>...</tag>`` of ``text`` lies, as ``(start, end)`` of the whole
    element, in order, each ending at the first closing tag after its opening (what
    ``re.finditer(r"<tag>.*?</tag>", text, re.DOTALL)`` finds), in time linear in ``text``:
    once an opening tag has no closing tag after it, no later one has, so the search ends
    there instead of scanning the rest again from every later opening tag, which made the
    regular expression quadratic in the number of unclosed tags."""
    start, end = f"<{tag}>", f"</{tag}>"
    out: list[tuple[int, int]] = []
    at = text.find(start)
    while at != -1:
        close = text.find(end, at + len(start))
        if close == -1:
            break
        out.append((at, close + len(end)))
        at = text.find(start, close + len(end))
    return out


def tagged(text: str, tag: str) -> list[str]:
    """The contents of every ``<tag>...</tag>`` in ``text`` (:func:`tag_spans`), in order."""
    inner, outer = len(tag) + 2, len(tag) + 3
    return [text[a + inner : b - outer] for a, b in tag_spans(text, tag)]


def without_tagged(text: str, tag: str) -> str:
    """``text`` less every ``<tag>...</tag>`` element (:func:`tag_spans`)."""
    parts, last = [], 0
    for a, b in tag_spans(text, tag):
        parts.append(text[last:a])
        last = b
    parts.append(text[last:])
    return "".join(parts)


def _no_constant(name: str) -> Any:
    raise ActionFormatError(f"tool call holds {name}, which is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ActionFormatError(f"tool call holds {text[:40]}, past a float's range (not a JSON number here)")
    return value


def _bounded_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise ActionFormatError(f"tool call holds an integer of {len(text)} digits (at most {MAX_NUMBER_CHARS})")
    return int(text)


def _load_call_json(text: str) -> Any:
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float, parse_int=_bounded_int)


def parse_tool_call(payload: str) -> ToolCall:
    """Parse the JSON inside one ``<tool_call>`` tag. JSON has no ``NaN`` or ``Infinity``
    (Python's reader takes them): a call holding one is an :class:`ActionFormatError`, so
    no tool and no scorer sees a number that compares false with everything."""
    try:
        obj = _load_call_json(payload)
    except json.JSONDecodeError as exc:
        raise ActionFormatError(f"tool call is not valid JSON: {json_error(exc)}") from None
    except RecursionError:
        raise ActionFormatError("tool call is nested too deeply") from None
    if not isinstance(obj, dict):
        raise ActionFormatError("tool call must be a JSON object with 'name' and 'arguments'")
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        raise ActionFormatError("tool call has no string 'name'")
    args = obj.get("arguments", {})
    if isinstance(args, str):  # some models double-encode arguments
        try:
            args = _load_call_json(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            raise ActionFormatError(f"tool call 'arguments' is not valid JSON: {json_error(exc)}") from None
        except RecursionError:
            raise ActionFormatError("tool call 'arguments' are nested too deeply") from None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ActionFormatError("tool call 'arguments' must be a JSON object")
    return ToolCall(name=name, arguments=args)


def parse_tool_action(text: str) -> ToolAction:
    """Parse every ``<tool_call>`` and the ``<answer>`` of an agent message.

    Raises :class:`ActionFormatError` on the first malformed call.
    """
    calls = tuple(parse_tool_call(m.strip()) for m in tagged(text, "tool_call"))
    answers = tagged(text, "answer")
    answer = answers[-1].strip() if answers else None
    return ToolAction(calls=calls, answer=answer, text=text)


def format_tool_calls(calls: list[ToolCall] | tuple[ToolCall, ...], answer: str | None = None) -> str:
    """Render calls (and an answer) in the tag format :func:`parse_tool_action` reads."""
    parts = [c.to_tag() for c in calls]
    if answer is not None:
        parts.append(f"<answer>{answer}</answer>")
    return "\n".join(parts)
