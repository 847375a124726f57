r"""Turning a model message into the action string an environment receives, per domain format.

* ``boxed``: the last ``\boxed{...}`` of the message, re-wrapped (reasoning before it is
  dropped); a message without a box is passed as is so the environment can say why it is
  invalid;
* ``tool_call``: every ``<tool_call>`` and the ``<answer>``, re-rendered canonically; a
  malformed call is passed as is (the environment reports the JSON error to the agent);
* ``free_text``: the stripped message.
"""

from __future__ import annotations

from spade_core.actions import find_boxed, format_boxed, format_tool_calls, parse_boxed, parse_tool_action
from spade_core.errors import ActionFormatError
from spade_core.metadata import ActionFormat


def extract_action(message: str, action_format: ActionFormat | str) -> str:
    """The action the environment gets for the agent's ``message`` (see module docstring)."""
    fmt = ActionFormat(action_format)
    if fmt is ActionFormat.boxed:
        payload = parse_boxed(message)
        return message if payload is None else format_boxed(payload)
    if fmt is ActionFormat.tool_call:
        try:
            action = parse_tool_action(message)
        except ActionFormatError:
            return message
        if not action.calls and action.answer is None:
            return message
        return format_tool_calls(action.calls, action.answer)
    return message.strip()


_ANSWER_CLOSE = "</answer>"


def action_end(text: str, action_format: ActionFormat | str) -> int | None:
    r"""Where the first complete action of ``text`` ends (an index into ``text``), or ``None``
    while there is none: after the first balanced ``\boxed{...}``, after ``</answer>`` (a
    tool-use reply may make several calls before it answers); a free-text reply has no end
    marker. What follows the end is chatter: a rollout that cuts replies there neither sends
    it to the environment nor trains on it."""
    fmt = ActionFormat(action_format)
    if fmt is ActionFormat.boxed:
        start = text.find("\\boxed{")
        if start == -1 or not find_boxed(text[start:]):
            return None
        depth, j = 0, start + len("\\boxed")
        while j < len(text):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        return None  # pragma: no cover - find_boxed found it closed
    if fmt is ActionFormat.tool_call:
        at = text.find(_ANSWER_CLOSE)
        return None if at == -1 else at + len(_ANSWER_CLOSE)
    return None


#: What the agent is told about acting, per format (appended to the system prompt).
ACTION_INSTRUCTIONS: dict[ActionFormat, str] = {
    ActionFormat.boxed: "Think briefly, then give exactly one action wrapped as \\boxed{your action}.",
    ActionFormat.tool_call: (
        'Call tools as <tool_call>{"name": ..., "arguments": {...}}</tool_call>; '
        "give your final answer as <answer>...</answer>."
    ),
    ActionFormat.free_text: "Reply with your action.",
}
