"""Design by editing: a child environment made from a parent chosen at the frontier.

The second design operator beside writing from scratch (ACCEL mutates high-regret levels;
OMNI-EPIC grows its archive from earlier tasks). A parent is an admitted environment of
the skill, ranked by its measured regret and win rate (:func:`frontier`); the designer
replies with either

* a **parameter edit** — new values for the parent's declared knobs (:mod:`.knobs`),
  ``NAME=value, ...``: read leniently (:func:`~.knobs.parse_values`), checked strictly
  against the declared ranges, and written into the parent's source literal by literal;
* a **code edit** — a unified diff against the parent's source, or one or more rewritten
  methods of its class in a fenced block (:func:`apply_code_edit`).

An edit that cannot be made into a child (no knob changed, a value out of range, a hunk
whose context is not in the parent, a method the class does not have) is an
:class:`EditApplyError`: the candidate is rejected at stage :data:`APPLY` with its message.
A child is then validated, hinted and admitted like any design (``Designer.edit_round``).
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spade_core.store import EnvStore

from spade_core.knobs import KnobSet, KnobValueError, check_values, format_values, parse_values
from spade_core.locations import syntax_error
from spade_core.metadata import EnvMetadata, EnvStatus

from .errors import DesignerError
from .extract import ExtractedEnv
from .llm.base import Conversation
from .records import AgentStats

#: The stage an edit that cannot be applied to its parent is rejected at.
APPLY = "apply"

EDIT_SYSTEM = (
    "You are the Environment Designer. You improve existing text games for training a reasoning "
    "agent by changing them a little. Reply only with the change."
)


class EditApplyError(DesignerError):
    """An edit that does not make a child of its parent (rejected at stage ``apply``)."""

    stage = APPLY


@dataclass(frozen=True)
class Parent:
    """A frontier environment an edit starts from."""

    metadata: EnvMetadata
    source: str
    knobs: KnobSet

    @property
    def id(self) -> str:
        return self.metadata.id


def frontier_rank(meta: EnvMetadata, band: tuple[float, float]) -> tuple[int, float]:
    """Sort key (smaller first) of an environment at the frontier: measured inside the
    win-rate ``band`` first, by regret (highest first); then never measured; then
    measured outside the band, nearest to it first."""
    stats = meta.latest_stats
    if stats is None:
        return (1, 0.0)
    low, high = band
    if low <= stats.win_rate <= high:
        return (0, -(stats.regret or 0.0))
    return (2, min(abs(stats.win_rate - low), abs(stats.win_rate - high)))


def frontier(store: EnvStore, domain: str, skill: str, *, band: tuple[float, float], size: int,
             need_knobs: bool = False) -> list[Parent]:
    """The best ``size`` admitted environments of ``skill`` to edit (see :func:`frontier_rank`);
    with ``need_knobs`` only those declaring knobs. Ties keep the store's order by id."""
    from spade_core.knobs import KnobDeclarationError, read_knobs

    metas = sorted(store.find(domain=domain, skill=skill, status=EnvStatus.admitted), key=lambda m: m.id)
    ranked = sorted(metas, key=lambda m: frontier_rank(m, band))
    out: list[Parent] = []
    for meta in ranked:
        source = store.get_source(meta.id)
        try:
            knobs = read_knobs(source, meta.class_name)
        except KnobDeclarationError:
            knobs = KnobSet(meta.class_name or "", ())
        if need_knobs and not knobs:
            continue
        out.append(Parent(meta, source, knobs))
        if len(out) >= size:
            break
    return out


def _agent_line(parent: Parent, agent: AgentStats | None) -> str:
    stats = parent.metadata.latest_stats
    rate = stats.win_rate if stats is not None else (agent.win_rate if agent is not None else None)
    if rate is None:
        return "The agent has not played it yet: change it so that it stays solvable but is not trivial."
    goal = "harder" if rate > 0.6 else "easier" if rate < 0.2 else "a little different, keeping it as hard"
    return f"The agent wins {rate:.0%} of its games: make it {goal}."


def parameter_edit_conversation(parent: Parent, *, agent: AgentStats | None = None, start: int = 0,
                                prefill: bool = True) -> Conversation:
    """A compact prompt listing the parent's knobs and ranges; the reply is ``NAME=value, ...``.

    With ``prefill`` the reply is started with the first knob's name (the backend continues
    it), which is most of what a small model needs to answer in the format. The knobs are
    listed from the ``start``-th (cyclically), so candidates of one round (``start`` = their
    index) begin with different knobs.
    """
    knobs = list(parent.knobs.knobs)
    if knobs:
        k = start % len(knobs)
        knobs = knobs[k:] + knobs[:k]
    about = " ".join(parent.metadata.description.split())[:200]
    lines = [f"- {k.name} = {format_values({k.name: k.value}).split('=', 1)[1]} ({k.describe()})" for k in knobs]
    example = format_values({k.name: _example_value(k) for k in knobs[:2]})
    user = (
        f"Game `{parent.metadata.name}` (skill {parent.metadata.skill}): {about}\n"
        f"{_agent_line(parent, agent)}\n"
        "Its settings (current value, allowed values):\n" + "\n".join(lines) + "\n"
        f"Reply with new values on one line, e.g. {example}"
    )
    conv: Conversation = [{"role": "system", "content": EDIT_SYSTEM}, {"role": "user", "content": user}]
    if prefill and knobs:
        conv.append({"role": "assistant", "content": f"{knobs[0].name}="})
    return conv


def _example_value(knob: Any) -> object:
    """A value for the reply's example that differs from the current one by a small step
    (a small model copies the example: it should then still propose a change)."""
    if knob.type is bool:
        return not knob.value
    if knob.type is str:
        i = knob.choices.index(knob.value) if knob.value in knob.choices else 0
        return knob.choices[(i + 1) % len(knob.choices)]
    step = 1 if knob.type is int else round((knob.high - knob.low) / 10, 6)
    up = knob.value + step
    value = up if up <= knob.high else knob.value - step
    return int(value) if knob.type is int else value


def parameter_child(parent: Parent, reply: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """``(child source, new values, previous values)`` for a parameter-edit reply.

    Raises :class:`EditApplyError` when the parent declares no knobs, the reply sets none
    that differs from the parent's value, or any value is not allowed (the message names
    each knob, value and declared range).
    """
    knobs = parent.knobs
    if not knobs:
        raise EditApplyError(f"{parent.id} declares no knobs (a KNOBS block) to edit")
    proposed = parse_values(reply, knobs)
    if not proposed:
        raise EditApplyError(
            "the reply sets no knob: write NAME=value for some of " + ", ".join(knobs.names)
            + f" (got {reply.strip()[:80]!r})"
        )
    try:
        checked = check_values(knobs, proposed)
    except KnobValueError as exc:
        raise EditApplyError(f"parameter edit rejected: {exc}") from None
    current = knobs.values()
    changed = {k: v for k, v in checked.items() if v != current[k] or type(v) is not type(current[k])}
    if not changed:
        raise EditApplyError("the reply changes no knob: every value equals the parent's ("
                             + format_values(current) + ")")
    from spade_core.knobs import apply_values

    return apply_values(parent.source, knobs, changed), changed, {k: current[k] for k in changed}


def code_edit_conversation(parent: Parent, *, agent: AgentStats | None = None, max_chars: int = 6000) -> Conversation:
    """Ask for a small change to the parent's code: a unified diff or rewritten methods."""
    code = parent.source if len(parent.source) <= max_chars else parent.source[:max_chars] + "\n# ... (truncated)"
    user = (
        f"Game `{parent.metadata.name}` (skill {parent.metadata.skill}):\n\n```python\n{code.rstrip()}\n```\n\n"
        f"{_agent_line(parent, agent)} Change one rule, the feedback or the reward. Reply with either a unified "
        "diff of the file (lines starting with @@, -, + and a space) or the rewritten method(s) of the class in "
        "one ```python block. Keep reset, step and solution consistent: solution() must still win."
    )
    return [{"role": "system", "content": EDIT_SYSTEM}, {"role": "user", "content": user}]


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_FENCE = re.compile(r"```[a-zA-Z]*\n(.*?)(?:```|$)", re.DOTALL)


def looks_like_diff(reply: str) -> bool:
    return any(_HUNK.match(line) for line in reply.splitlines())


def apply_unified_diff(source: str, diff: str) -> str:
    """``source`` with the hunks of a unified diff applied.

    A hunk applies where its context and removed lines match the source exactly, at its
    stated line or the nearest place after the previous hunk (line numbers written by a
    model are often off). Raises :class:`EditApplyError` naming the hunk and the line that
    is not in the source.
    """
    lines = source.splitlines()
    hunks: list[list[str]] = []
    for raw in diff.splitlines():
        if _HUNK.match(raw):
            hunks.append([raw])
        elif hunks and not raw.startswith(("--- ", "+++ ")):
            if raw.startswith("```"):
                continue
            hunks[-1].append(raw)
    if not hunks:
        raise EditApplyError("the diff has no hunk (a line starting with @@ -N,M +N,M @@)")
    out: list[str] = []
    pos = 0
    for number, hunk in enumerate(hunks, 1):
        header = _HUNK.match(hunk[0])
        assert header is not None
        old: list[str] = []
        new: list[str] = []
        for line in hunk[1:]:
            tag, text = (line[:1], line[1:]) if line else (" ", "")
            if tag == "\\":
                continue  # "\ No newline at end of file"
            if tag not in " +-":
                raise EditApplyError(f"hunk {number}: line {line[:60]!r} does not start with ' ', '+' or '-'")
            if tag in " -":
                old.append(text)
            if tag in " +":
                new.append(text)
        if not old and not new:
            raise EditApplyError(f"hunk {number} changes nothing")
        stated = max(0, int(header.group(1)) - 1)
        at = _find_block(lines, old, start=pos, near=max(stated, pos))
        if at is None:
            first = next((t for t in old if t.strip()), old[0] if old else "")
            raise EditApplyError(f"hunk {number} does not apply: its context/removed lines (from {first.strip()[:60]!r}) "
                                 f"are not in the parent's source at or after line {pos + 1}")
        out.extend(lines[pos:at])
        out.extend(new)
        pos = at + len(old)
    out.extend(lines[pos:])
    return "\n".join(out) + ("\n" if source.endswith("\n") else "")


def _find_block(lines: Sequence[str], block: Sequence[str], *, start: int, near: int) -> int | None:
    if not block:
        return min(max(near, start), len(lines))
    candidates = [i for i in range(start, len(lines) - len(block) + 1) if list(lines[i:i + len(block)]) == list(block)]
    return min(candidates, key=lambda i: abs(i - near)) if candidates else None


def replace_methods(source: str, code: str, class_name: str) -> str:
    """``source`` with the methods defined in ``code`` (bare ``def`` or inside a class)
    replacing the same-named methods of ``class_name``.

    Raises :class:`EditApplyError` when ``code`` does not parse, defines no function, or a
    function is not a method of the class (so a rewrite cannot silently add dead code).
    """
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise EditApplyError(f"the rewritten code does not parse: {syntax_error(exc)}") from None
    funcs: list[ast.FunctionDef] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            funcs.append(node)
        elif isinstance(node, ast.ClassDef):
            funcs.extend(n for n in node.body if isinstance(n, ast.FunctionDef))
    if not funcs:
        raise EditApplyError("the reply rewrites no method (no def in its code block)")
    parent_tree = ast.parse(source)
    cls = next((n for n in parent_tree.body if isinstance(n, ast.ClassDef) and n.name == class_name), None)
    if cls is None:
        raise EditApplyError(f"the parent has no class {class_name}")
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    missing = [f.name for f in funcs if f.name not in methods]
    if missing:
        raise EditApplyError(f"{class_name} has no method {', '.join(missing)} (methods: {', '.join(methods)})")
    code_lines = code.splitlines()
    lines = source.splitlines()
    # replace from the bottom so earlier line numbers stay valid
    for func in sorted(funcs, key=lambda f: methods[f.name].lineno, reverse=True):
        target = methods[func.name]
        first = min([target.lineno] + [d.lineno for d in target.decorator_list])
        indent = " " * target.col_offset
        body_first = min([func.lineno] + [d.lineno for d in func.decorator_list])
        text = code_lines[body_first - 1:func.end_lineno]
        strip = len(text[0]) - len(text[0].lstrip())
        rewritten = [(indent + t[strip:]) if t.strip() else "" for t in text]
        lines[first - 1:target.end_lineno] = rewritten
    return "\n".join(lines) + ("\n" if source.endswith("\n") else "")


def code_child(parent: Parent, reply: str) -> str:
    """The child source of a code-edit reply (a unified diff or rewritten methods); raises
    :class:`EditApplyError` when it does not apply or leaves the code unchanged."""
    class_name = parent.metadata.class_name or parent.knobs.class_name
    if looks_like_diff(reply):
        child = apply_unified_diff(parent.source, reply)
    else:
        blocks = _FENCE.findall(reply)
        if not blocks and "def " not in reply:
            raise EditApplyError("the reply holds neither a unified diff (@@ hunks) nor a rewritten method "
                                 f"(def ... in a code block): {reply.strip()[:80]!r}")
        code = max(blocks, key=len) if blocks else reply
        if not class_name:
            raise EditApplyError(f"{parent.id} names no class, so no method of it can be rewritten")
        child = replace_methods(parent.source, code, class_name)
    if child == parent.source:
        raise EditApplyError("the edit leaves the parent's code unchanged")
    try:
        ast.parse(child)
    except SyntaxError as exc:
        raise EditApplyError(f"the edited code does not parse: {syntax_error(exc)}") from None
    return child


def unified_diff(parent: str, child: str, parent_id: str) -> str:
    """The unified diff from ``parent`` to ``child`` (what ``EnvEdit.diff`` stores)."""
    return "".join(difflib.unified_diff(parent.splitlines(keepends=True), child.splitlines(keepends=True),
                                        fromfile=f"{parent_id}.py", tofile="child.py"))


def extracted_child(child: str, parent: EnvMetadata) -> ExtractedEnv:
    """The child as the designer's extraction of a design gives it: the parent's class,
    description and turn limit (an edit keeps the game's identity)."""
    class_name = parent.class_name
    if not class_name:
        raise EditApplyError(f"{parent.id} names no class")
    return ExtractedEnv(source=child, class_name=class_name, description=parent.description,
                        max_turns=parent.max_turns)
