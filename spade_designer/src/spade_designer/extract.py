"""Environment source from a model reply.

Models wrap code in Markdown fences, add prose before and after, write several blocks
(a sketch, then the full version), or run out of tokens inside the last block. The rule:

1. candidates are every fenced block (an unclosed last fence counts, up to the end of the
   reply), or the whole reply when it has no fence;
2. a candidate qualifies when it parses and defines a top-level class whose name ends in
   ``Env`` (:func:`spade_core.source.find_env_class`);
3. of the qualifying candidates the last one wins (models revise forward), longest on ties.

When nothing qualifies, :class:`ExtractionError` says why for the repair prompt (no code
at all, a syntax error at line N of the best block, no ``...Env`` class).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from spade_core.errors import EnvLoadError
from spade_core.source import find_env_class

from .errors import ExtractionError

_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+-]*)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class ExtractedEnv:
    source: str
    class_name: str
    #: The environment class's docstring (first paragraph), or "".
    description: str
    #: ``max_turns`` when the class states it as an integer literal, else ``None``.
    max_turns: int | None


def code_blocks(text: str) -> list[str]:
    """Contents of the fenced blocks of ``text`` in order; an unclosed last fence runs to the end."""
    blocks: list[str] = []
    fences = list(_FENCE.finditer(text))
    i = 0
    while i < len(fences):
        start = fences[i].end() + 1
        if i + 1 < len(fences):
            blocks.append(text[start : fences[i + 1].start()])
            i += 2
        else:
            blocks.append(text[start:])
            i += 1
    return blocks


def extract_env(text: str) -> ExtractedEnv:
    """The environment defined in a model reply; see the module docstring."""
    candidates = code_blocks(text) or [text]
    qualifying: list[tuple[int, str, str]] = []
    problems: list[str] = []
    for pos, block in enumerate(candidates):
        source = block.strip("\n")
        if not source.strip():
            continue
        try:
            class_name = find_env_class(source)
        except EnvLoadError as exc:
            problems.append(str(exc))
            continue
        qualifying.append((pos, source, class_name))
    if not qualifying:
        if not any(c.strip() for c in candidates):
            raise ExtractionError("the reply contains no code")
        detail = problems[-1] if problems else "no Python code found"
        raise ExtractionError(f"no usable environment class in the reply: {detail.removeprefix('<env>: ')}")
    _, source, class_name = max(qualifying, key=lambda q: (q[0], len(q[1])))
    source = source.rstrip() + "\n"
    description, max_turns = _class_facts(source, class_name)
    return ExtractedEnv(source, class_name, description, max_turns)


def _class_facts(source: str, class_name: str) -> tuple[str, int | None]:
    tree = ast.parse(source)
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    node = classes.get(class_name)
    if node is None:
        return "", None
    doc = (ast.get_docstring(node) or "").strip().split("\n\n")[0]
    return " ".join(doc.split())[:2000], _inherited_max_turns(node, classes)


def _inherited_max_turns(cls: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> int | None:
    """``max_turns`` of the class, else of its bases defined in the same file (a scaffold's
    base class states it), nearest first."""
    seen: set[str] = set()
    queue = [cls]
    while queue:
        node = queue.pop(0)
        if node.name in seen:
            continue
        seen.add(node.name)
        found = _max_turns(node)
        if found is not None:
            return found
        queue.extend(classes[b.id] for b in node.bases if isinstance(b, ast.Name) and b.id in classes)
    return None


def _turn_limit(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 10_000:
        return value
    return None


def _max_turns(cls: ast.ClassDef) -> int | None:
    """An integer literal assigned to ``max_turns`` (class body or ``self.max_turns``), or
    the default of an ``__init__`` parameter named ``max_turns``."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            args = node.args.args[len(node.args.args) - len(node.args.defaults) :]
            pairs = list(zip(args, node.args.defaults, strict=True))
            pairs += list(zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True))
            for arg, default in pairs:
                if arg.arg == "max_turns" and isinstance(default, ast.Constant):
                    found = _turn_limit(default.value)
                    if found is not None:
                        return found
    for node in ast.walk(cls):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            value = _turn_limit(node.value.value)
            if value is None:
                continue
            for target in node.targets:
                name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", None)
                if name in ("max_turns", "MAX_TURNS"):
                    return value
    return None
