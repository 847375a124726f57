"""How far a designed environment or an agent episode got: graded signals for shaping.

A 135M policy at the start of self-play writes no valid environment and wins no game, so
the pass/fail rewards of both roles tie and every advantage is 0. These functions grade
*how close* a failure came, so the shaping plugin (:mod:`.shaping`) can tell a candidate
rejected by the fuzzer from one that produced no code at all, and an agent that answers
in the required action format from one that does not. They never touch the episode
return or the regret (REFERENCE.md definitions); they only feed named shaping terms.
"""

from __future__ import annotations

import ast
import re
from typing import Any

#: Gates a designed environment passes, in order: generation, code extraction, the eight
#: validation stages, the privileged hint, admission into the store.
DESIGN_GATES: tuple[str, ...] = (
    "generation",
    "extract",
    "static",
    "load",
    "contract",
    "determinism",
    "fuzz",
    "feasibility",
    "degenerate",
    "novelty",
    "hint",
    "admission",
)

_FENCE = re.compile(r"```(?:python|py)?\s*\n", re.IGNORECASE)
_ENV_CLASS = re.compile(r"^\s*class\s+\w*Env\b", re.MULTILINE)
_METHODS = ("reset", "step", "solution")


def _code_of(text: str) -> str:
    """The first fenced code block of a reply (unclosed fences run to the end), else the reply."""
    m = _FENCE.search(text)
    if m is None:
        return text
    body = text[m.end() :]
    end = body.find("```")
    return body if end < 0 else body[:end]


def code_structure(text: str) -> float:
    """Fraction in [0, 1] of the milestones of an environment reply that ``text`` reaches.

    Milestones (equal weight): a fenced code block, a class whose name ends in ``Env``,
    each of the methods ``reset``, ``step`` and ``solution``, code that parses as Python
    (a reply cut by the token budget usually does not), and — graded, in [0, 1] — the
    share of the code's lines in its longest prefix that parses (so two cut replies that
    reach the same milestones still differ by how much of each is valid Python). Used to
    grade candidates that fail extraction: truncated code scores above no code.
    """
    code = _code_of(text)
    marks = [
        _FENCE.search(text) is not None,
        _ENV_CLASS.search(code) is not None,
        *(re.search(rf"^\s*def\s+{name}\s*\(", code, re.MULTILINE) is not None for name in _METHODS),
    ]
    try:
        ast.parse(code)
        parses = bool(code.strip()) and marks[1]
    except (SyntaxError, ValueError):
        parses = False
    marks.append(parses)
    graded = parsed_share(code) if marks[0] else 0.0  # prose can parse too ("hello" is a name)
    return (sum(marks) + graded) / (len(marks) + 1)


def parsed_share(code: str) -> float:
    """Share of ``code``'s non-blank lines inside its longest line prefix that parses."""
    lines = code.splitlines()
    total = sum(1 for line in lines if line.strip())
    if total == 0:
        return 0.0
    for end in range(len(lines), 0, -1):
        if not lines[end - 1].strip():
            continue
        try:
            ast.parse("\n".join(lines[:end]))
        except (SyntaxError, ValueError):
            continue
        return sum(1 for line in lines[:end] if line.strip()) / total
    return 0.0


def design_progress(failed_stage: str | None, structure: float = 0.0) -> float:
    """How far a candidate got through :data:`DESIGN_GATES`, in [0, 1].

    ``None`` (nothing rejected it) is 1. A candidate rejected at gate ``k`` scores
    ``(k + partial) / len(DESIGN_GATES)``, where ``partial`` is ``structure`` (clipped to
    [0, 1)) for an extraction failure and 0 otherwise, so a later gate always scores more
    than any earlier one. A stage name outside the gates (a plugin's own) scores 0 and is
    reported by :func:`unknown_stage`.
    """
    if failed_stage is None:
        return 1.0
    if failed_stage == "apply":
        # an edit that does not apply to its parent got as far as a reply without code
        failed_stage = "extract"
    if failed_stage not in DESIGN_GATES:
        return 0.0
    k = DESIGN_GATES.index(failed_stage)
    partial = min(max(float(structure), 0.0), 0.999) if failed_stage == "extract" else 0.0
    return (k + partial) / len(DESIGN_GATES)


def unknown_stage(failed_stage: str | None) -> bool:
    """True when ``failed_stage`` is not one of :data:`DESIGN_GATES`."""
    return failed_stage is not None and failed_stage not in DESIGN_GATES and failed_stage != "apply"


def well_formed_action(message: str, action_format: Any) -> bool:
    """Whether an agent message carries an action in its domain's format.

    ``boxed``: a non-empty ``\\boxed{...}``; ``tool_call``: at least one parseable tool
    call or an answer; ``free_text``: any non-blank text.
    """
    # imported here: `import spade_core` loads the shaping plugin, which imports this module
    from spade_core.actions import parse_boxed, parse_tool_action
    from spade_core.errors import ActionFormatError
    from spade_core.metadata import ActionFormat

    fmt = ActionFormat(action_format)
    if fmt is ActionFormat.boxed:
        payload = parse_boxed(message)
        return payload is not None and bool(payload.strip())
    if fmt is ActionFormat.tool_call:
        try:
            action = parse_tool_action(message)
        except ActionFormatError:
            return False
        return bool(action.calls) or action.answer is not None
    return bool(message.strip())
