"""Text from environments, pools and stores, made safe to print to a terminal.

What a command prints may come from code or data the user did not write (an imported pool,
an LLM-written environment, its observations). A terminal obeys the control characters in
it: ``ESC ] 52`` writes the clipboard, ``ESC ] 0`` retitles the window, ``ESC [ 2K`` and a
carriage return erase what was printed, ``BEL`` rings. rich's ``markup.escape`` escapes
square brackets only, so every command prints such text through :func:`escape` (markup and
control characters), source code through :func:`printable`, and JSON through
:func:`terminal_json`.
"""

from __future__ import annotations

import os
import re
from typing import Any

from rich.console import Console
from rich.markup import escape as _escape_markup

__all__ = ["escape", "print_whole", "printable", "terminal_json", "unwrapped"]

#: C0 controls but tab and newline, DEL, C1 controls (8-bit CSI, OSC, ST among them), and the
#: bidirectional overrides and isolates that reorder what is shown.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with each control character written out as its escape (``\\x1b``,
    ``\\x9b``, ``\\u202e``), so it is shown rather than obeyed; tab and newline stay."""
    return _UNSAFE.sub(_visible, text)


def escape(value: object) -> str:
    """``str(value)`` ready for rich markup: control characters written out
    (:func:`printable`) and square brackets escaped (rich's ``markup.escape``)."""
    return _escape_markup(printable(str(value)))


def terminal_json(text: str) -> str:
    """JSON text (from ``json.dumps``) with the control characters it leaves as they are
    (DEL, C1, the bidirectional ones; ``json.dumps`` escapes only C0) written as ``\\uXXXX``
    escapes: the same JSON value, nothing a terminal obeys. Outside strings JSON is ASCII
    without controls, so every match is inside a string."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def unwrapped(console: Console) -> bool:
    """Whether ``console`` writes to a pipe or a file with no width set (``COLUMNS``):
    rich then wraps at 80 columns, which cuts a table's rows in two in a log or for
    ``grep``; such output is printed whole instead (:func:`print_whole`)."""
    return not console.is_terminal and not os.environ.get("COLUMNS")


def print_whole(console: Console, renderable: Any) -> None:
    """Print ``renderable`` (a table) on ``console``: at the terminal's width on a
    terminal, at its own natural width when :func:`unwrapped` (never folded at 80)."""
    if not unwrapped(console):
        console.print(renderable)
        return
    width = console.width
    natural = console.measure(renderable, options=console.options.update(max_width=1 << 20)).maximum
    console.width = max(width, natural)  # print() caps any width it is given at this one
    try:
        console.print(renderable)
    finally:
        console.width = width
