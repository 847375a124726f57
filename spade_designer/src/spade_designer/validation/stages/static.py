"""Stage 1, static: size limits, parses, exactly one environment class, allowed imports.

Nothing runs here; this is the cheap filter in front of the sandbox (a syntax error or a
banned import is rejected in about a millisecond). Import and escape rules are the
sandbox's own (``spade_sandbox.check_source``) so the two can never disagree.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from spade_core.locations import syntax_error

from ..codes import Reason
from ..context import Run
from ..runner import PARSE_LOCK, Rejection

#: Sandbox static-check rule -> reason code. Unknown rules are forbidden constructs.
_RULE_CODES = {
    "syntax": Reason.syntax_error,
    "import": Reason.banned_import,
    "size": Reason.source_too_large,
    "env-class": Reason.no_env_class,
}

StaticChecker = Callable[..., Any]


def default_checker() -> StaticChecker:
    from spade_sandbox import check_source

    return check_source


def env_classes(tree: ast.Module) -> list[str]:
    """The environment classes a source defines: top-level classes named ``*Env`` that
    define ``reset`` and ``step`` or inherit (from a base, possibly imported, such as the
    tool-use domain's ``ToolEnv``), minus those that only serve as a base of another one
    (helper bases are allowed)."""
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name.endswith("Env")]
    used_as_base = {b.id for c in classes for b in c.bases if isinstance(b, ast.Name)}
    out = []
    for node in classes:
        methods = {n.name for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        if ({"reset", "step"} <= methods or node.bases) and node.name not in used_as_base:
            out.append(node.name)
    return out


def _no_env_class_message(tree: ast.Module) -> str:
    """Why no class counts as the environment: the classes found and what each lacks."""
    found = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        methods = {n.name for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        missing = [m for m in ("reset", "step") if m not in methods]
        if not node.name.endswith("Env"):
            found.append(f"{node.name} (its name does not end in 'Env')")
        elif missing and not node.bases:
            found.append(f"{node.name} (defines no {' or '.join(m + '()' for m in missing)} and has no base to inherit them)")
        else:
            found.append(f"{node.name} (a base of another environment class)")
    head = "no top-level class named '*Env' that defines or inherits reset() and step()"
    return f"{head}; classes found: {', '.join(found)}" if found else f"{head}; the source defines no class"


def first_banned_import(tree: ast.Module, extra: tuple[str, ...] | list[str]) -> tuple[int, str] | None:
    """``(line, module)`` of the first absolute import outside the sandbox's allow-list.

    The sandbox's full static check finds it too; doing this on the tree already parsed
    here makes the commonest rejection of generated code cost about a millisecond.
    """
    from spade_sandbox.allowlist import DEFAULT_ALLOWED_MODULES, module_allowed

    allowed = DEFAULT_ALLOWED_MODULES | frozenset(extra)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not module_allowed(alias.name, allowed):
                    return node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module is not None:
            if not module_allowed(node.module, allowed):
                return node.lineno, node.module
    return None


def check(run: Run, checker: StaticChecker | None = None) -> str:
    from spade_sandbox.static import collection_paused

    # The collector stays paused for the whole stage: the trees it builds and walks are
    # large and short-lived, and collections meanwhile rescan them (a 128 KB source: 1.06 s
    # of CPU with the collector running, 0.40 s paused).
    with collection_paused():
        return _check(run, checker)


def _check(run: Run, checker: StaticChecker | None) -> str:
    from spade_sandbox.static import parse_untrusted

    source = run.candidate.source
    cfg = run.config
    size = len(source.encode("utf-8", "surrogatepass"))
    if size > cfg.max_source_bytes:
        raise Rejection(Reason.source_too_large, f"source is {size} bytes (limit {cfg.max_source_bytes})", details={"bytes": size})
    lines = source.count("\n") + 1
    if lines > cfg.max_source_lines:
        raise Rejection(Reason.source_too_large, f"source is {lines} lines (limit {cfg.max_source_lines})", details={"lines": lines})
    try:
        with PARSE_LOCK:
            tree = parse_untrusted(source)  # linear in size: the collector paused meanwhile
    except SyntaxError as exc:
        raise Rejection(
            Reason.syntax_error,
            syntax_error(exc),
            details={"line": exc.lineno, "col": exc.offset},
        ) from None
    except RecursionError:
        from spade_sandbox.static import nesting_message

        raise Rejection(Reason.syntax_error, nesting_message()) from None
    except (ValueError, MemoryError) as exc:  # null bytes
        raise Rejection(Reason.syntax_error, f"cannot parse the source: {exc}") from None
    banned = first_banned_import(tree, run.candidate.allowed_modules)
    if banned is not None:
        line, name = banned
        raise Rejection(
            Reason.banned_import,
            f"line {line}: import of {name!r} is not allowed in the sandbox",
            details={"rules": [{"line": line, "rule": "import", "message": f"import of {name!r}"}]},
        )
    classes = env_classes(tree)
    if run.candidate.class_name is not None:
        if run.candidate.class_name not in classes:
            raise Rejection(
                Reason.no_env_class,
                f"class {run.candidate.class_name!r} is not an environment class defined at top level",
            )
    elif not classes:
        raise Rejection(Reason.no_env_class, _no_env_class_message(tree))
    elif len(classes) > 1:
        raise Rejection(
            Reason.multiple_env_classes,
            f"{len(classes)} environment classes ({', '.join(classes)}); a source file defines exactly one",
            details={"classes": classes},
        )
    with PARSE_LOCK:
        report = (checker or default_checker())(source, allowed_modules=tuple(run.candidate.allowed_modules))
    if not report.ok:
        bad = list(report.findings)
        first = bad[0] if bad else None
        rule = str(getattr(first, "rule", "")) if first is not None else ""
        code = _RULE_CODES.get(rule, Reason.banned_import if "import" in rule else Reason.forbidden_construct)
        where = f"line {getattr(first, 'line', '?')}: " if first is not None else ""
        raise Rejection(
            code,
            where + (getattr(first, "message", "static check failed") if first is not None else "static check failed"),
            details={
                "rules": [
                    {"line": getattr(f, "line", None), "rule": str(getattr(f, "rule", "")), "message": getattr(f, "message", "")}
                    for f in bad
                ]
            },
        )
    from spade_core.env import declared_reward_range
    from spade_core.errors import EnvContractError

    try:
        declared_reward_range(source, run.candidate.class_name)
    except EnvContractError as exc:
        raise Rejection(Reason.invalid_reward_range, str(exc)) from None
    lo, hi = run.candidate.reward_range
    literal_rewards(tree, (lo, hi), run.full_reward_threshold())
    return (
        f"{lines} lines, class {run.candidate.class_name or classes[0]}, imports allowed; "
        f"rewards checked against [{lo:g}, {hi:g}] ({run.reward_range_source})"
    )


#: Names of a variable that holds the text an environment answers with.
_TEXT_NAMES = ("obs", "msg", "message", "text", "feedback", "reply", "out", "result", "view", "desc")


def _literal(node: ast.AST) -> float | None:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _literal(node.operand)
        return None if inner is None else -inner
    return None


def _texty(node: ast.AST) -> bool:
    """Whether an expression reads as the observation text: a string literal, an f-string,
    string formatting or concatenation, or a variable named like one."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp):
        return _texty(node.left) or _texty(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in ("format", "join", "strip") or _texty(node.func.value)
    if isinstance(node, ast.Name):
        return any(w in node.id.lower() for w in _TEXT_NAMES)
    return False


def literal_rewards(tree: ast.Module, reward_range: tuple[float, float], full: float) -> None:
    """Rewards written as literals in the step results a source returns, judged before
    anything runs, so that a defect on a path no replay reaches (a win without
    ``solution()``) is still seen: an ``(observation, reward, terminated, ...)`` tuple,
    ``step``'s five values or a helper's first three, whose reward literal lies outside
    the range (``reward_out_of_range``), or is full reward beside a literal
    ``terminated=False`` (and ``truncated=False``): a win that never ends the episode
    (``win_not_terminated``)."""
    lo, hi = reward_range
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple) and len(node.value.elts) in (3, 5)):
            continue
        elts = node.value.elts
        reward = _literal(elts[1])
        # five values are step's shape whatever the first is; three must read as text first
        if reward is None or (len(elts) == 3 and not _texty(elts[0])):
            continue
        if not lo - 1e-9 <= reward <= hi + 1e-9:
            raise Rejection(
                Reason.reward_out_of_range,
                f"line {node.lineno} returns the reward {reward:g}, outside the reward range [{lo:g}, {hi:g}]",
                details={"line": node.lineno, "reward": reward},
            )
        flags = elts[2:4]
        if reward >= full and flags and all(isinstance(f, ast.Constant) and f.value is False for f in flags):
            raise Rejection(
                Reason.win_not_terminated,
                f"line {node.lineno} pays full reward ({reward:g}) with terminated=False: a win must end the "
                "episode (terminated=True), or the agent is paid and plays on",
                details={"line": node.lineno, "reward": reward},
            )
