r"""Reading a ``solution()`` string as the action sequences it spells out.

Environments written for the reference implementation return their solution as one
string. When that string holds actions in the domain's format it is a replayable plan,
and feasibility can be proved from it instead of being left unproven:

* boxed commands: every ``\boxed{...}`` in the text, in order, is one step; whatever
  stands between them (whitespace, numbering, explanations) is not part of any action;
* tool use: ``<tool_call>`` and ``<answer>`` tags. Whether several calls form one turn
  is not written down, so two readings are offered: one turn per block of the text
  (blocks are separated by blank lines; the tags of a block are sent together, which is
  how multi-call turns are written) and one turn per tag (the reference tool-use base
  executes only the first call of a message).

A string with no action in the format (an answer, prose) has no plan: its feasibility
stays unproven.
"""

from __future__ import annotations

import re

from spade_core.actions import find_boxed, format_boxed
from spade_core.names import ActionFormat

_TAG = re.compile(r"<tool_call>.*?</tool_call>|<answer>.*?</answer>", re.DOTALL)
_BLOCKS = re.compile(r"\n[ \t\r\f\v]*\n")


def boxed_plan(text: str) -> list[str]:
    r"""Every ``\boxed{...}`` command of ``text`` as one action each, in order."""
    return [format_boxed(payload) for payload in find_boxed(text)]


def tool_plans(text: str) -> list[list[str]]:
    """The readings of a tool-use solution string: per block, then per tag (distinct,
    non-empty ones only)."""
    per_tag = _TAG.findall(text)
    if not per_tag:
        return []
    per_block = ["\n".join(tags) for block in _BLOCKS.split(text) if (tags := _TAG.findall(block))]
    plans = [per_block, per_tag]
    return [p for i, p in enumerate(plans) if p not in plans[:i]]


def solution_plans(text: str, action_format: ActionFormat | str | None = None) -> list[list[str]]:
    """The action sequences ``text`` can be replayed as, the most literal reading first.

    ``action_format`` is the domain's; without one (or for free text) the format is read
    from the text itself: tool tags when it has them and no boxed command, else boxed.
    An empty list means the string holds no action in the format.
    """
    fmt = ActionFormat(action_format) if action_format is not None else None
    if fmt is ActionFormat.tool_call:
        return tool_plans(text)
    if fmt is ActionFormat.boxed:
        plan = boxed_plan(text)
        return [plan] if plan else []
    plan = boxed_plan(text)
    if plan:
        return [plan]
    return tool_plans(text)
