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
  executes only the first call of a message);
* tool use written as Python calls, the other habit of environments written elsewhere:
  ``cd(path='/home/document')``, one or more a line (``;``-separated), each line
  optionally numbered or bulleted (``1.``, ``1)``, ``- ``, ``* ``, ``Step 1:``, ``>>>``)
  or in backticks, in a code fence or not. Arguments are Python literals (strings,
  numbers, booleans, ``None``, lists, tuples, dicts), read with :func:`ast.literal_eval`
  (nothing is evaluated); positional arguments take the tool's parameters in its schema's
  order, so they need the schema (``params``). ``answer(...)`` with one argument, when no
  tool is named ``answer``, is the ``<answer>`` of the turn. Each call becomes the
  ``<tool_call>`` tag the environment reads; tags written in the text between such lines
  keep their place. Two readings again: one turn per line, one turn per call. Lines that
  are not calls (prose, fences) are skipped; a line that is a call but cannot be read
  (an unknown tool while the schemas are known, a positional argument without a schema,
  a value JSON cannot hold) leaves the text to the tag reading alone, as before.

A string with no action in the format (an answer, prose) has no plan: its feasibility
stays unproven.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from spade_core.actions import ToolCall, find_boxed, format_boxed
from spade_core.names import ActionFormat

#: Tool name -> its parameter names in schema order (what positional arguments map to).
ToolParams = Mapping[str, Sequence[str]]

_TAG = re.compile(r"<tool_call>.*?</tool_call>|<answer>.*?</answer>", re.DOTALL)
_BLOCKS = re.compile(r"\n[ \t\r\f\v]*\n")


def boxed_plan(text: str) -> list[str]:
    r"""Every ``\boxed{...}`` command of ``text`` as one action each, in order."""
    return [format_boxed(payload) for payload in find_boxed(text)]


def tool_plans(text: str, params: ToolParams | None = None, *, python: bool = True) -> list[list[str]]:
    """The readings of a tool-use solution string: per block, then per tag (distinct,
    non-empty ones only); for calls written in Python syntax (``python``), per line, then
    per call. ``params`` (tool name -> parameter names, :func:`tool_params`) checks names
    and maps positional arguments; ``None``: the tools are not known."""
    plans = python_call_plans(text, params) if python else []
    if plans:
        return plans
    per_tag = _TAG.findall(text)
    if not per_tag:
        return []
    per_block = ["\n".join(tags) for block in _BLOCKS.split(text) if (tags := _TAG.findall(block))]
    plans = [per_block, per_tag]
    return [p for i, p in enumerate(plans) if p not in plans[:i]]


class _Unreadable(ValueError):
    """A line that is a call but cannot be replayed as one (why is the message)."""


#: A line's numbering or bullet: ``1.``, ``1)``, ``(1)``, ``- ``, ``* ``, ``• ``, ``Step 1:``,
#: ``Turn 2 -``, ``>>>``.
_PREFIX = re.compile(
    r"^\s*(?:(?:step|turn|call|action)\s*\d+\s*[:.)\-]?|\(?\d+\s*[.):]|[-*\u2022]|>>>)\s+",
    re.IGNORECASE,
)
#: JSON cannot hold these: a call with one is not replayable as a tag.
_NOT_JSON = (set, frozenset, bytes, complex)


def _json_value(value: Any) -> Any:
    """``value`` (from ``ast.literal_eval``) as JSON data: tuples become lists."""
    if isinstance(value, _NOT_JSON) or isinstance(value, float) and not math.isfinite(value):
        raise _Unreadable(f"{value!r} is not a JSON value")
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise _Unreadable(f"{value!r} has keys that are not strings")
        return {k: _json_value(v) for k, v in value.items()}
    return value


def _statements(line: str) -> list[ast.Call] | None:
    """The calls of ``line`` when it is nothing but ``name(...)`` statements; ``None``
    when it is something else (prose, code that is not a plain call)."""
    candidates = [line]
    stripped = line.rstrip(" \t.,;")
    if stripped != line:
        candidates.append(stripped)
    if len(stripped) > 1 and stripped[0] == "`" and stripped[-1] == "`":
        candidates.append(stripped.strip("`"))
    for candidate in candidates:
        try:
            tree = ast.parse(candidate, mode="exec")
        except (SyntaxError, ValueError):
            continue
        body = tree.body
        if body and all(
            isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
            for node in body
        ):
            return [node.value for node in body]  # type: ignore[attr-defined]
        return None
    return None


def _read_call(node: ast.Call, params: ToolParams | None) -> str:
    """One Python call as the action the environment reads (a ``<tool_call>`` tag, or an
    ``<answer>`` tag for ``answer(text)`` when no tool is named ``answer``)."""
    name = node.func.id  # type: ignore[attr-defined]
    try:
        args = [_json_value(ast.literal_eval(a)) for a in node.args]
        kwargs = {k.arg: _json_value(ast.literal_eval(k.value)) for k in node.keywords}
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError) as exc:
        raise _Unreadable(f"{name}(): an argument is not a literal ({exc})") from None
    if None in kwargs:  # f(**spread)
        raise _Unreadable(f"{name}(): ** arguments are not literals")
    is_tool = params is None or name in params
    if name == "answer" and (params is None or "answer" not in params) and len(args) + len(kwargs) == 1:
        value = args[0] if args else next(iter(kwargs.values()))
        return f"<answer>{value}</answer>"
    if not is_tool:
        raise _Unreadable(f"{name}() is not one of the tools ({', '.join(params or ())})")
    if args:
        names = list(params[name]) if params is not None else None
        if names is None:
            raise _Unreadable(f"{name}(): positional arguments need the tool's schema")
        if len(args) > len(names):
            raise _Unreadable(f"{name}() takes {len(names)} parameters, the call passes {len(args)} positionally")
        for pname, value in zip(names, args, strict=False):
            if pname in kwargs:
                raise _Unreadable(f"{name}(): {pname!r} is given twice")
            kwargs[pname] = value
    return ToolCall(name, kwargs).to_tag()


#: A list item's number inside a line (``1. a() 2. b()``): a number with ``.`` or ``)`` after
#: it, at the start or after a space, followed by a space.
_INLINE_NUMBER = re.compile(r"(?:(?<=\s)|^)(?:(?:step|turn|call|action)\s*)?(\d+)\s*[.):](?=\s)", re.IGNORECASE)


def _items(line: str) -> list[str]:
    """A line cut at its inline list numbers when they count up from the first (``1. a()
    2. b() 3. <answer>x</answer>``, as prompts write a plan on one line); else the line."""
    text = line.strip()
    marks = list(_INLINE_NUMBER.finditer(text))
    if len(marks) < 2 or marks[0].start() != 0:
        return [line]
    first = int(marks[0].group(1))
    kept = [m for i, m in enumerate(marks) if int(m.group(1)) == first + i]
    if len(kept) != len(marks):
        return [line]
    bounds = [m.start() for m in kept] + [len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def python_call_plans(text: str, params: ToolParams | None = None) -> list[list[str]]:
    """The readings of a solution string that writes its tool calls in Python call syntax
    (see the module docstring): one turn per line (or per item of a list numbered inside
    one line), then one turn per call; ``[]`` when the text has no such call or one of
    them cannot be read."""
    per_line: list[str] = []
    per_call: list[str] = []
    found = False
    for raw in (item for whole in text.splitlines() for item in _items(whole)):
        tags = _TAG.findall(raw)
        if tags:  # a tag written between calls keeps its place
            per_line.append("\n".join(tags))
            per_call.extend(tags)
            continue
        line = _PREFIX.sub("", raw, count=1).strip()
        calls = _statements(line) if line else None
        if not calls:
            continue
        try:
            actions = [_read_call(c, params) for c in calls]
        except _Unreadable:
            return []
        found = True
        per_line.append("\n".join(actions))
        per_call.extend(actions)
    if not found:
        return []
    plans = [per_line, per_call]
    return [p for i, p in enumerate(plans) if p not in plans[:i]]


def tool_params(schemas: Any) -> dict[str, list[str]] | None:
    """Tool name -> parameter names (in the schema's order) of OpenAI-format tool schemas
    (``{"type": "function", "function": {...}}`` or the bare function object); ``None``
    when ``schemas`` is not a list of such schemas."""
    if not isinstance(schemas, (list, tuple)) or not schemas:
        return None
    out: dict[str, list[str]] = {}
    for schema in schemas:
        fn = schema.get("function", schema) if isinstance(schema, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            return None
        parameters = fn.get("parameters")
        properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
        out[fn["name"]] = [p for p in properties if isinstance(p, str)] if isinstance(properties, Mapping) else []
    return out


def solution_plans(text: str, action_format: ActionFormat | str | None = None,
                   params: ToolParams | None = None) -> list[list[str]]:
    """The action sequences ``text`` can be replayed as, the most literal reading first.

    ``action_format`` is the domain's; without one (or for free text) the format is read
    from the text itself: tool tags (or Python calls, when ``params`` says the environment
    has tools) when it has them and no boxed command, else boxed. ``params``: the environment's tools (:func:`tool_params`), for
    calls written in Python syntax. An empty list means the string holds no action in the
    format.
    """
    fmt = ActionFormat(action_format) if action_format is not None else None
    if fmt is ActionFormat.tool_call:
        return tool_plans(text, params)
    if fmt is ActionFormat.boxed:
        plan = boxed_plan(text)
        return [plan] if plan else []
    plan = boxed_plan(text)
    if plan:
        return [plan]
    # Without a format, Python calls are read only from an environment that has tools: in a
    # boxed game, "1. reset()" in a prose solution is prose.
    return tool_plans(text, params, python=params is not None)
