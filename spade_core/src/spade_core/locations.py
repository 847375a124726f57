"""One way to say where in a text a parse failed: ``line 2, column 14``.

Every message that names the place of a JSON or Python syntax error is built here, so
that they read alike and a parser's own wording is joined once: the standard library's
JSON messages that end in "at" ("Unterminated string starting at", "Invalid control
character at") are followed by the place directly instead of by a second "at".

Columns are 1-based, as editors, ``json`` and ``SyntaxError.offset`` count them.
"""

from __future__ import annotations

import json


def place(line: int | None = None, column: int | None = None) -> str:
    """``line L, column C``, ``line L`` or ``column C`` (a one-line text); ``""`` when
    neither is known."""
    parts = []
    if line:
        parts.append(f"line {line}")
    if column:
        parts.append(f"column {column}")
    return ", ".join(parts)


def at_place(message: str, line: int | None = None, column: int | None = None) -> str:
    """``message`` followed by where it happened: ``"<message> at line 2, column 14"``,
    or ``"... starting at line 2, column 14"`` for a message that already ends in "at";
    ``message`` alone when the place is unknown."""
    where = place(line, column)
    if not where:
        return message
    message = message.rstrip()
    joiner = " " if message.endswith(" at") or message == "at" else " at "
    return f"{message}{joiner}{where}"


def json_error(exc: json.JSONDecodeError, *, one_line: bool = False) -> str:
    """The reason and place of a JSON error: ``"Expecting ',' delimiter at line 2,
    column 1"``; ``one_line``: the document is one line of a larger file (JSON Lines), so
    only the column is given."""
    return at_place(exc.msg, None if one_line else exc.lineno, exc.colno)


def syntax_error(exc: SyntaxError) -> str:
    """The place and reason of a Python syntax error: ``"syntax error at line 2, column
    31: expected ':'"`` (the reason may name another line, as in "unterminated string
    literal (detected at line 3)")."""
    where = place(exc.lineno, exc.offset)
    return f"syntax error{' at ' + where if where else ''}: {exc.msg or 'invalid syntax'}"
