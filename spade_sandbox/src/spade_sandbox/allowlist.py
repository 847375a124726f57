"""What untrusted environment code may import, name and touch.

Shared by the static layer (:mod:`spade_sandbox.static`) and the runtime guard inside the
worker (:mod:`spade_sandbox.guard`); imports only the standard library so the worker stays
small.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

#: Pure standard-library modules that cannot reach the OS through their public API.
#: The zygote imports them all before forking, so workers never touch the filesystem.
DEFAULT_ALLOWED_MODULES: frozenset[str] = frozenset(
    {
        "__future__",
        "abc",
        "bisect",
        "cmath",
        "collections",
        "collections.abc",
        "copy",
        "dataclasses",
        "datetime",
        "decimal",
        "enum",
        "fractions",
        "functools",
        "hashlib",
        "heapq",
        "itertools",
        "json",
        "math",
        "numbers",
        "operator",
        "random",
        "re",
        "statistics",
        "string",
        "textwrap",
        "typing",
        "unicodedata",
    }
)

#: Public names a module wrapper leaves out because they walk attributes named by a
#: *string* (built at run time, so neither the static layer nor the guarded ``getattr``
#: sees a dunder): ``operator.attrgetter("seed.__globals__")`` or
#: ``string.Formatter().get_field("0.seed.__globals__", ...)`` reach real module globals.
WRAPPER_EXCLUDED: dict[str, frozenset[str]] = {
    "operator": frozenset({"attrgetter", "methodcaller"}),
    "string": frozenset({"Formatter"}),
}

#: Allow-listed modules whose real objects reach the interpreter's ``eval``: code that
#: imports the name gets the public names of the facade module instead (imported in its
#: place, trusted). ``math_verify.parse`` returns sympy expressions, and an expression's
#: methods ``sympify`` strings through ``eval`` with the real builtins.
MODULE_FACADES: dict[str, str] = {
    "math_verify": "spade_sandbox.facades.math_verify",
}

#: Single-underscore attributes of library objects that reach a module's namespace or the
#: real ``eval``: ``enum.Enum._convert_("X", "posix", ...)`` builds members from any module in
#: ``sys.modules``; ``typing.ForwardRef._evaluate`` and ``typing._eval_type`` run ``eval`` with
#: whatever globals they are given. (Private names of the environment's own objects stay
#: allowed: generated code uses ``self._state`` everywhere.)
FORBIDDEN_PRIVATE_ATTRIBUTES: frozenset[str] = frozenset(
    {"_convert_", "_evaluate", "_eval_type"}
)

#: Builtins that environment code may not call or name: they reach the interpreter's
#: internals (eval/exec/compile, frames, namespaces) or the OS (open, input).
FORBIDDEN_BUILTINS: frozenset[str] = frozenset(
    {
        "__import__",
        "breakpoint",
        "compile",
        "delattr",
        "eval",
        "exec",
        "exit",
        "globals",
        "help",
        "input",
        "locals",
        "open",
        "quit",
        "setattr",
        "vars",
        "memoryview",
    }
)

#: Dunder attributes that are harmless to read or call (method protocol, names).
SAFE_DUNDER_ATTRIBUTES: frozenset[str] = frozenset(
    {
        "__init__",
        "__name__",
        "__qualname__",
        "__doc__",
        "__len__",
        "__str__",
        "__repr__",
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__hash__",
        "__iter__",
        "__next__",
        "__contains__",
        "__getitem__",
        "__setitem__",
        "__delitem__",
        "__post_init__",
        "__enter__",
        "__exit__",
        "__add__",
        "__sub__",
        "__mul__",
        "__bool__",
    }
)

#: Dunder names a class may not define: they hook attribute lookup, pickling or
#: finalisation, which escapes the static view of what code runs when.
FORBIDDEN_DUNDER_DEFINITIONS: frozenset[str] = frozenset(
    {
        "__getattribute__",
        "__reduce__",
        "__reduce_ex__",
        "__del__",
        "__init_subclass__",
        "__class_getitem__",
        "__set_name__",
        "__subclasshook__",
        "__instancecheck__",
        "__subclasscheck__",
        "__prepare__",
        "__getstate__",
        "__setstate__",
    }
)

#: Frame, code and traceback attributes: the classic ways from any object to globals.
FRAME_ATTRIBUTES: frozenset[str] = frozenset(
    {
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "cr_frame",
        "cr_code",
        "cr_await",
        "ag_frame",
        "ag_code",
        "ag_await",
        "f_back",
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_code",
        "f_trace",
        "tb_frame",
        "tb_next",
        "co_code",
        "co_consts",
        "func_globals",
        "func_code",
        "mro",
    }
)

#: Module-level dunder names code may read (``if __name__ == "__main__":``).
SAFE_DUNDER_NAMES: frozenset[str] = frozenset({"__name__", "__doc__"})


def is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def attribute_allowed(name: str) -> bool:
    """Whether untrusted code may access attribute ``name`` (static and runtime rule)."""
    if name in FRAME_ATTRIBUTES or name in FORBIDDEN_PRIVATE_ATTRIBUTES:
        return False
    if is_dunder(name):
        return name in SAFE_DUNDER_ATTRIBUTES
    return True


def module_allowed(name: str, allowed: frozenset[str] | set[str]) -> bool:
    """``name`` (dotted) is allowed if it, or a package above it that is allow-listed as
    ``pkg.*``, is in ``allowed``."""
    if name in allowed:
        return True
    parts = name.split(".")
    return any(".".join(parts[:i]) + ".*" in allowed for i in range(1, len(parts)))


def attribute_names(node: ast.AST) -> Iterator[str]:
    """Every attribute name ``node`` itself reads or writes by a name written in the source.

    ``ast.Attribute`` is the common one; a class pattern of ``match`` reads the attributes
    named by its keywords (``case object(__globals__=g)`` is ``g = x.__globals__``). The
    static layer and the guard's compile step both ask this, so a new kind of node that
    names attributes is added here once.
    """
    if isinstance(node, ast.Attribute):
        yield node.attr
    elif isinstance(node, ast.MatchClass):
        yield from node.kwd_attrs
