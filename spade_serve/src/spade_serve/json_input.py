"""JSON a client sent, read with bounds: the one reader of request bodies, WebSocket
messages, MCP messages and listing cursors.

Python's ``json.loads`` takes any JSON and more: nesting as deep as the interpreter's
recursion limit (past it ``RecursionError``), integers of up to 4,300 digits (past them
``ValueError``), ``NaN`` and ``Infinity``. A request should be none of these, and none may
end in an answer 500; :func:`loads` refuses each with :class:`MalformedJson`, which says
which bound was passed, so every route answers with its protocol's own error (422,
JSON-RPC ``-32700``, the WebSocket's ``INVALID_JSON``).
"""

from __future__ import annotations

import json
import math
from typing import Any

#: The deepest nesting of arrays and objects taken. A request of this server nests three
#: or four levels (an MCP call's arguments a few more).
MAX_DEPTH = 64
#: The longest number taken, in characters: a 64-bit integer has 20 digits; a float's
#: shortest text is under 25.
MAX_NUMBER_CHARS = 100


class MalformedJson(ValueError):
    """The text is not JSON, or passes one of :func:`loads`'s bounds (the message says
    which)."""


def _int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise MalformedJson(f"a number of {len(text)} digits: numbers are at most {MAX_NUMBER_CHARS} characters")
    return int(text)


def _float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise MalformedJson(f"a number of {len(text)} characters: numbers are at most {MAX_NUMBER_CHARS}")
    value = float(text)
    if not math.isfinite(value):
        raise MalformedJson(f"the number {text[:40]} is out of range")
    return value


def _constant(name: str) -> Any:
    raise MalformedJson(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_int=_int, parse_float=_float, parse_constant=_constant)


def loads(raw: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of ``raw`` (UTF-8 bytes or text); :class:`MalformedJson` when it is not
    JSON, nests deeper than ``max_depth``, holds a number over :data:`MAX_NUMBER_CHARS`
    characters or out of a float's range, or ``NaN`` / ``Infinity``."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise MalformedJson(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        value = _DECODER.decode(text)
    except RecursionError:
        raise MalformedJson(f"nested deeper than {max_depth} levels") from None
    except MalformedJson:
        raise
    except ValueError as exc:  # json.JSONDecodeError, and int()'s own limit
        raise MalformedJson(str(exc)) from None
    # Nesting is at most the number of brackets: most bodies need no walk.
    if text.count("[") + text.count("{") > max_depth:
        _check_depth(value, max_depth)
    return value


def _check_depth(value: Any, max_depth: int) -> None:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > max_depth:
                raise MalformedJson(f"nested deeper than {max_depth} levels")
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))


__all__ = ["MAX_DEPTH", "MAX_NUMBER_CHARS", "MalformedJson", "loads"]
