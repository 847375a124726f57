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
* ``nesting`` — an expression or block nested deeper than CPython's compiler accepts;
* ``env-class`` — no top-level class whose name ends in ``Env``.

Attributes are checked wherever the source names one by a plain name, not only in
``obj.attr``: ``match`` class patterns (``case object(__globals__=g)``), and string
annotations and ``ForwardRef("...")`` arguments, which ``typing`` evaluates as code.

Every rule is linear in the size of the source (one parse, one compile, one iterative walk;
the format-field scan looks at each character a bounded number of times), so a crafted
source costs the host no more than a plain one of the same size
(``python -m bench.bench_static``).
"""

from __future__ import annotations

import ast
import gc
import re
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from .allowlist import (
    DEFAULT_ALLOWED_MODULES,
    FORBIDDEN_BUILTINS,
    FORBIDDEN_DUNDER_DEFINITIONS,
    FRAME_ATTRIBUTES,
    SAFE_DUNDER_NAMES,
    attribute_allowed,
    attribute_names,
    is_dunder,
    module_allowed,
)

#: Larger sources are rejected before parsing (generated environments are a few KB).
MAX_SOURCE_CHARS = 512_000

#: One replacement field: from a ``{`` to the next brace. Each ``{`` scans only to the next
#: brace, so a scan of the whole string is linear (the former single pattern backtracked
#: over every ``__`` of an unclosed field: 63 KB of ``{`` and ``_`` took 13 s).
_BRACED = re.compile(r"\{([^{}]*)\}")
_INTERNAL_PART = re.compile(r"__|\b(?:gi|f|tb|cr|ag)_")

#: How far annotation strings inside annotation strings are followed.
_MAX_ANNOTATION_DEPTH = 3


def reaches_internals(text: str) -> bool:
    """Whether a replacement field of ``text`` (``{...}``) names a dunder or frame part."""
    if "{" not in text:
        return False
    return any(_INTERNAL_PART.search(m.group(1)) for m in _BRACED.finditer(text))


def nesting_limit() -> int:
    """About how deep one expression or block may nest before CPython's parser and
    compiler give up in this interpreter (they allow three levels per unit of the
    recursion limit)."""
    return 3 * sys.getrecursionlimit()


@contextmanager
def collection_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a large tree is built. ``ast.parse`` of a
    500 KB source allocates millions of tracked nodes, and the collections they trigger
    rescan everything built so far: the parse grows faster than the source (3.8 s against
    0.9 s with the collector paused). Only the caller that paused it resumes it."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def parse_untrusted(source: str, filename: str = "<env>") -> ast.Module:
    """``ast.parse`` of candidate source in time linear in its size (see
    :func:`collection_paused`); raises what ``ast.parse`` raises."""
    with collection_paused():
        return ast.parse(source, filename=filename)


def tree_depth(tree: ast.AST) -> int:
    """The deepest nesting of ``tree``'s nodes (iterative: the tree may be deeper than
    Python's own recursion allows)."""
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


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

    def visit_Attribute(self, node: ast.Attribute | ast.MatchClass) -> None:
        for attr in attribute_names(node):
            where = "" if isinstance(node, ast.Attribute) else " (named in a match class pattern)"
            if attr in FRAME_ATTRIBUTES:
                self.add(node, "frame", f"attribute {attr!r}{where} (frame/code/type internals) is not allowed")
            elif is_dunder(attr) and not attribute_allowed(attr):
                self.add(node, "dunder", f"attribute {attr!r}{where} is not allowed (dunder attributes reach interpreter internals)")
            elif not attribute_allowed(attr):
                self.add(node, "dunder", f"attribute {attr!r}{where} is not allowed (it reaches module namespaces or eval)")

    visit_MatchClass = visit_Attribute

    # --- match patterns that bind names -----------------------------------------------
    def visit_MatchAs(self, node: ast.MatchAs | ast.MatchStar) -> None:
        self._check_binding(node, node.name)

    visit_MatchStar = visit_MatchAs

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        self._check_binding(node, node.rest)

    # --- strings typing evaluates as code -----------------------------------------------
    def _check_annotation(self, annotation: ast.AST | None, depth: int = 0) -> None:
        """Strings inside an annotation are code: ``typing.get_type_hints`` evaluates them.
        Each is parsed as an expression and checked by every rule, at its own line."""
        if annotation is None or depth >= _MAX_ANNOTATION_DEPTH:
            return
        for node in ast.walk(annotation):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                try:
                    code = ast.parse(node.value.strip(), mode="eval")
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    continue  # not an expression: typing refuses it when evaluated
                ast.increment_lineno(code, getattr(node, "lineno", 1) - 1)
                self.walk(code)
                self._check_annotation(code.body, depth + 1)

    def visit_arg(self, node: ast.arg) -> None:
        if is_dunder(node.arg):
            self.add(node, "dunder", f"parameter name {node.arg!r} is not allowed")
        self._check_annotation(node.annotation)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_annotation(node.annotation)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._check_annotation(node.returns)
        if node.name in FORBIDDEN_DUNDER_DEFINITIONS:
            self.add(node, "dunder", f"defining {node.name!r} is not allowed")
        elif node.name in FORBIDDEN_BUILTINS:
            self.add(node, "builtin", f"shadowing {node.name!r} is not allowed")

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for kw in node.keywords:
            if kw.arg == "metaclass":
                self.add(node, "dunder", "custom metaclasses are not allowed")

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
            if isinstance(target, ast.Constant) and isinstance(target.value, str) and reaches_internals(target.value):
                self.add(node, "format", "format strings may not reach dunder or frame attributes")
        callee = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if callee in {"ForwardRef", "TypeVar", "NewType"}:
            # Their string arguments become forward references, evaluated as code later.
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                self._check_annotation(arg)

    def visit_Constant(self, node: ast.Constant) -> None:
        # Format strings are often built before .format(); catch the literal wherever it is.
        if isinstance(node.value, str) and reaches_internals(node.value):
            self.add(node, "format", "string contains a format field reaching dunder or frame attributes")


#: Sources that passed, remembered by (source, allowed modules) -> class name. A rollout
#: spawns the same code many times; parsing it once is enough (the rules are pure
#: functions of the source and the allow-list). Bounded, least recently used forgotten.
_PASSED: OrderedDict[tuple[str, frozenset[str]], str] = OrderedDict()
_PASSED_MAX = 1024
#: Larger sources are not remembered: the memory holds the source itself, and 1,024 sources
#: at the size cap would keep half a gigabyte alive in the caller's process.
_PASSED_MAX_CHARS = 64_000
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
    with collection_paused():  # the whole check: its trees are large and short-lived
        report = _check(source, key[1])
    if report.ok and report.class_name is not None and len(source) <= _PASSED_MAX_CHARS:
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
        tree = parse_untrusted(source)
    except SyntaxError as exc:
        return StaticReport(
            False, [StaticFinding(exc.lineno or 0, max((exc.offset or 1) - 1, 0), "syntax", exc.msg)]
        )
    except RecursionError:
        return StaticReport(False, [StaticFinding(1, 0, "nesting", nesting_message(None))])
    except (ValueError, MemoryError) as exc:  # null bytes
        return StaticReport(False, [StaticFinding(0, 0, "syntax", f"cannot parse source: {exc}")])
    checker = _Checker(DEFAULT_ALLOWED_MODULES | frozenset(allowed_modules))
    try:
        # Some errors appear only when compiling (misplaced __future__, bad nonlocal...).
        # The text, not the tree, is compiled: CPython turns a tree back into its C form
        # with a third of the depth its own parser allows, so a chain of a few thousand
        # ``a + a + ...`` that Python runs would be refused here.
        with collection_paused():
            compile(source, "<env>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        checker.findings.append(StaticFinding(exc.lineno or 0, max((exc.offset or 1) - 1, 0), "syntax", exc.msg))
    except RecursionError:
        checker.findings.append(StaticFinding(1, 0, "nesting", nesting_message(tree)))
    except (ValueError, MemoryError) as exc:
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


def nesting_message(tree: ast.AST | None = None) -> str:
    """The ``nesting`` finding's message: how deep ``tree`` nests (when it could be built)
    and about how deep CPython goes here."""
    limit = nesting_limit()
    if tree is None:
        return (
            f"an expression or block nests deeper than CPython parses (limit about {limit} levels "
            "in this interpreter); split it into smaller expressions"
        )
    return f"expression nested {tree_depth(tree)} deep; CPython compiles about {limit} levels here: split it"


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
