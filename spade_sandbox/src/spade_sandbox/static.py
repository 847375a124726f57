"""The static layer: reject dangerous environment source before it reaches a worker.

This is a filter that gives early, readable messages; it is **not** the security boundary
(the worker's OS layers are). Rules, each reported as a :class:`StaticFinding`:

* ``syntax`` — the source does not parse;
* ``size`` — the source is larger than :data:`MAX_SOURCE_CHARS`;
* ``import`` — an import outside the allow-list, or a relative import;
* ``dunder`` — a dunder attribute or name outside the small safe set, or a class defining a
  hook such as ``__getattribute__`` / ``__reduce__``;
* ``frame`` — frame, code or traceback attributes (``gi_frame``, ``f_back``...);
* ``builtin`` — ``eval``, ``exec``, ``open``, ``__import__``, ``globals``... named or called;
* ``dynamic-attribute`` — ``getattr``/``hasattr`` with a non-literal or forbidden name;
* ``format`` — a literal format string reaching dunder attributes (``"{0.__class__}"``);
* ``env-class`` — no top-level class whose name ends in ``Env``.
"""

from __future__ import annotations

import ast
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from .allowlist import (
    DEFAULT_ALLOWED_MODULES,
    FORBIDDEN_BUILTINS,
    FORBIDDEN_DUNDER_DEFINITIONS,
    FRAME_ATTRIBUTES,
    SAFE_DUNDER_NAMES,
    attribute_allowed,
    is_dunder,
    module_allowed,
)

#: Larger sources are rejected before parsing (generated environments are a few KB).
MAX_SOURCE_CHARS = 512_000

_FORMAT_FIELD = re.compile(r"\{[^{}]*(__|\bgi_|\bf_|\btb_|\bcr_|\bag_)[^{}]*\}")


@dataclass(frozen=True)
class StaticFinding:
    """One problem: where (1-based line, 0-based column), which rule, and what to change."""

    line: int
    col: int
    rule: str
    message: str


@dataclass(frozen=True)
class StaticReport:
    """Result of :func:`check_source`: ``ok`` when there are no findings; ``class_name`` is
    the environment class the sandbox will instantiate (``None`` when none was found)."""

    ok: bool
    findings: list[StaticFinding] = field(default_factory=list)
    class_name: str | None = None

    def summary(self) -> str:
        if self.ok:
            return f"ok ({self.class_name})"
        return "; ".join(f"line {f.line}: [{f.rule}] {f.message}" for f in self.findings)


class _Checker:
    """Applies the rules to every node of a tree. The ``visit_<Node>`` methods look at one
    node each; :meth:`walk` reaches every node without recursion (deep trees cannot
    overflow the stack) and calls only the rules that apply to its type."""

    def __init__(self, allowed: frozenset[str]) -> None:
        self.allowed = allowed
        self.findings: list[StaticFinding] = []
        self._rules = {
            getattr(ast, name[len("visit_"):]): getattr(self, name)
            for name in dir(self)
            if name.startswith("visit_")
        }

    def walk(self, tree: ast.AST) -> None:
        rules = self._rules
        stack = [tree]
        pop, push, extend = stack.pop, stack.append, stack.extend
        node_type = ast.AST
        while stack:
            node = pop()
            rule = rules.get(type(node))
            if rule is not None:
                rule(node)
            for name in node._fields:
                child = getattr(node, name, None)
                if isinstance(child, node_type):
                    push(child)
                elif type(child) is list:
                    extend(c for c in child if isinstance(c, node_type))

    def add(self, node: ast.AST, rule: str, message: str) -> None:
        self.findings.append(
            StaticFinding(getattr(node, "lineno", 0), getattr(node, "col_offset", 0), rule, message)
        )

    # --- imports ------------------------------------------------------------------
    def _check_module(self, node: ast.AST, name: str) -> None:
        if not module_allowed(name, self.allowed):
            self.add(
                node,
                "import",
                f"import of {name!r} is not allowed in the sandbox "
                f"(allowed: {', '.join(sorted(m for m in self.allowed if m != '__future__'))})",
            )

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_module(node, alias.name)
            self._check_binding(node, alias.asname)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.add(node, "import", "relative imports are not allowed (environments are single files)")
        elif node.module is not None:
            self._check_module(node, node.module)
        for alias in node.names:
            if alias.name != "*" and (is_dunder(alias.name) or alias.name.startswith("_")) and node.module != "__future__":
                self.add(node, "import", f"importing private name {alias.name!r} from {node.module!r} is not allowed")
            self._check_binding(node, alias.asname)

    def _check_binding(self, node: ast.AST, name: str | None) -> None:
        if name and is_dunder(name):
            self.add(node, "dunder", f"binding the dunder name {name!r} is not allowed")

    # --- names and attributes -------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if name in FORBIDDEN_BUILTINS:
            self.add(node, "builtin", f"{name!r} is not available in the sandbox")
        elif is_dunder(name) and name not in SAFE_DUNDER_NAMES:
            self.add(node, "dunder", f"the name {name!r} is not allowed")
        elif is_dunder(name) and not isinstance(node.ctx, ast.Load):
            self.add(node, "dunder", f"assigning to {name!r} is not allowed")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        if attr in FRAME_ATTRIBUTES:
            self.add(node, "frame", f"attribute {attr!r} (frame/code/type internals) is not allowed")
        elif not attribute_allowed(attr):
            self.add(node, "dunder", f"attribute {attr!r} is not allowed (dunder attributes reach interpreter internals)")

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name in FORBIDDEN_DUNDER_DEFINITIONS:
            self.add(node, "dunder", f"defining {node.name!r} is not allowed")
        elif node.name in FORBIDDEN_BUILTINS:
            self.add(node, "builtin", f"shadowing {node.name!r} is not allowed")

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for kw in node.keywords:
            if kw.arg == "metaclass":
                self.add(node, "dunder", "custom metaclasses are not allowed")

    def visit_arg(self, node: ast.arg) -> None:
        if is_dunder(node.arg):
            self.add(node, "dunder", f"parameter name {node.arg!r} is not allowed")

    # --- calls ------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in {"getattr", "hasattr"}:
            if len(node.args) < 2:
                self.add(node, "dynamic-attribute", f"{func.id}() needs a literal attribute name")
            else:
                name = node.args[1]
                if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                    self.add(
                        node,
                        "dynamic-attribute",
                        f"{func.id}() with a computed attribute name is not allowed; use a literal string",
                    )
                elif not attribute_allowed(name.value):
                    self.add(node, "dunder", f"{func.id}() of {name.value!r} is not allowed")
        if isinstance(func, ast.Attribute) and func.attr in {"format", "format_map"}:
            target = func.value
            if isinstance(target, ast.Constant) and isinstance(target.value, str) and _FORMAT_FIELD.search(target.value):
                self.add(node, "format", "format strings may not reach dunder or frame attributes")

    def visit_Constant(self, node: ast.Constant) -> None:
        # Format strings are often built before .format(); catch the literal wherever it is.
        if isinstance(node.value, str) and "{" in node.value and _FORMAT_FIELD.search(node.value):
            self.add(node, "format", "string contains a format field reaching dunder or frame attributes")


#: Sources that passed, remembered by (source, allowed modules) -> class name. A rollout
#: spawns the same code many times; parsing it once is enough (the rules are pure
#: functions of the source and the allow-list). Bounded, least recently used forgotten.
_PASSED: OrderedDict[tuple[str, frozenset[str]], str] = OrderedDict()
_PASSED_MAX = 1024
_PASSED_LOCK = threading.Lock()


def check_source(source: str, allowed_modules: Iterable[str] = ()) -> StaticReport:
    """Check environment ``source`` against the static rules.

    ``allowed_modules`` extends :data:`~spade_sandbox.allowlist.DEFAULT_ALLOWED_MODULES`
    (a domain's helper modules; ``"pkg.*"`` allows a package and its submodules). Never
    raises on bad source: every problem is a finding. A source that passed before with
    the same allowed modules is answered from memory (a fresh report each time).
    """
    if type(source) is not str:
        return _check(source, allowed_modules)
    key = (source, frozenset(allowed_modules))
    with _PASSED_LOCK:
        class_name = _PASSED.get(key)
        if class_name is not None:
            _PASSED.move_to_end(key)
            return StaticReport(True, [], class_name)
    report = _check(source, key[1])
    if report.ok and report.class_name is not None:
        with _PASSED_LOCK:
            _PASSED[key] = report.class_name
            while len(_PASSED) > _PASSED_MAX:
                _PASSED.popitem(last=False)
    return report


def _check(source: str, allowed_modules: Iterable[str]) -> StaticReport:
    if not isinstance(source, str):
        return StaticReport(False, [StaticFinding(0, 0, "syntax", f"source must be str, got {type(source).__name__}")])
    if len(source) > MAX_SOURCE_CHARS:
        return StaticReport(
            False, [StaticFinding(1, 0, "size", f"source is {len(source)} characters (limit {MAX_SOURCE_CHARS})")]
        )
    try:
        tree = ast.parse(source, filename="<env>")
    except SyntaxError as exc:
        return StaticReport(
            False, [StaticFinding(exc.lineno or 0, max((exc.offset or 1) - 1, 0), "syntax", exc.msg)]
        )
    except (ValueError, RecursionError, MemoryError) as exc:  # null bytes, absurd nesting
        return StaticReport(False, [StaticFinding(0, 0, "syntax", f"cannot parse source: {exc}")])
    checker = _Checker(DEFAULT_ALLOWED_MODULES | frozenset(allowed_modules))
    try:
        # Some errors appear only when compiling (misplaced __future__, bad nonlocal...).
        compile(tree, "<env>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        checker.findings.append(StaticFinding(exc.lineno or 0, max((exc.offset or 1) - 1, 0), "syntax", exc.msg))
    except (ValueError, RecursionError, MemoryError) as exc:
        checker.findings.append(StaticFinding(0, 0, "syntax", f"cannot compile source: {exc}"))
    try:
        checker.walk(tree)
    except RecursionError:
        checker.add(tree, "syntax", "source nests too deeply to check")
    class_name = _env_class(tree)
    if class_name is None:
        checker.findings.append(StaticFinding(1, 0, "env-class", "no top-level class whose name ends in 'Env'"))
    checker.findings.sort(key=lambda f: (f.line, f.col, f.rule, f.message))
    return StaticReport(not checker.findings, checker.findings, class_name)


def _env_class(tree: ast.Module) -> str | None:
    """Same rule as ``spade_core.source.find_env_class``: the last top-level ``*Env`` class
    with reset and step, else the last ``*Env`` class."""
    candidates: list[tuple[str, bool]] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.endswith("Env"):
            methods = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
            candidates.append((node.name, {"reset", "step"} <= methods))
    if not candidates:
        return None
    full = [name for name, ok in candidates if ok]
    return full[-1] if full else candidates[-1][0]
