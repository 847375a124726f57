"""Environment source code: finding the environment class and loading trusted code.

Loading here executes code **in this process**; it is for trusted code only (seed
environments shipped by an installed plugin, or code the user explicitly opts in to).
Untrusted code goes through ``spade_sandbox``.
"""

from __future__ import annotations

import ast
import sys
import types
from typing import Any

from .errors import EnvLoadError
from .locations import syntax_error


def find_env_class(source: str, *, source_name: str = "<env>") -> str:
    """Name of the environment class defined in ``source``.

    The rule of the reference format: a top-level class whose name ends in ``Env``; when
    several do, the last one defined that has both ``reset`` and ``step`` methods (helper
    base classes come first in generated code).
    """
    return env_class_node(parse_source(source, source_name=source_name), source_name=source_name).name


def parse_source(source: str, *, source_name: str = "<env>") -> ast.Module:
    """``ast.parse`` with a syntax error reported as :class:`EnvLoadError` (line and reason)."""
    try:
        return ast.parse(source, filename=source_name)
    except SyntaxError as exc:
        raise EnvLoadError(syntax_error(exc), source_name=source_name) from None


def env_class_node(tree: ast.Module, *, source_name: str = "<env>") -> ast.ClassDef:
    """The environment class of a parsed module, by the rule of :func:`find_env_class`
    (for callers that also need the tree, so the source is parsed once)."""
    candidates: list[tuple[ast.ClassDef, bool]] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.endswith("Env"):
            methods = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
            candidates.append((node, {"reset", "step"} <= methods))
    if not candidates:
        raise EnvLoadError("no top-level class whose name ends in 'Env'", source_name=source_name)
    full = [node for node, ok in candidates if ok]
    return full[-1] if full else candidates[-1][0]


def load_trusted_class(source: str, class_name: str | None = None, *, source_name: str = "<env>") -> type:
    """Execute trusted ``source`` in a fresh module and return its environment class."""
    name = class_name or find_env_class(source, source_name=source_name)
    module = types.ModuleType(f"spade_env_{abs(hash(source)) & 0xFFFFFFFF:x}")
    module.__file__ = source_name
    try:
        code = compile(source, source_name, "exec")
        exec(code, module.__dict__)  # noqa: S102 - trusted code by contract of this function
    except Exception as exc:  # report any failure of user code as a load error
        raise EnvLoadError(f"{type(exc).__name__}: {exc}", source_name=source_name) from exc
    cls = module.__dict__.get(name)
    if not isinstance(cls, type):
        raise EnvLoadError(f"class {name!r} not found after executing the source", source_name=source_name)
    sys.modules.setdefault(module.__name__, module)  # let pickling/copy find the class
    return cls


def instantiate(cls: type, **kwargs: Any) -> Any:
    try:
        return cls(**kwargs)
    except Exception as exc:
        raise EnvLoadError(f"{cls.__name__}() raised {type(exc).__name__}: {exc}") from exc
