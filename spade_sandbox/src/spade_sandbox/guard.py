"""Runtime guard inside the worker: curated builtins and allow-listed module wrappers.

Environment code runs with a ``__builtins__`` that lacks eval/exec/open/... and whose
``__import__`` hands out *wrappers* of pre-imported allow-listed modules. A wrapper exposes
only a module's public, non-module attributes, closing escapes such as ``dataclasses.sys``,
``json.codecs`` or ``typing.sys``. ``getattr``/``hasattr`` refuse dunder and frame names.
``str.format``/``str.format_map`` are reached only through the checked versions of
:mod:`spade_sandbox.guard_format`, which refuse format fields that walk to dunder or frame
attributes: :func:`guard_format_access` rewrites every ``.format``/``.format_map``
attribute read of the environment's source into a call that hands them out.
Like the static layer, this is a filter; the OS layers are the boundary.

Imported by the zygote and workers: standard library only.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import gc
import importlib
import re
import sys
import types
from collections.abc import Iterable
from typing import Any

from .allowlist import (
    FORBIDDEN_BUILTINS,
    FORBIDDEN_DUNDER_DEFINITIONS,
    FORBIDDEN_PRIVATE_ATTRIBUTES,
    FRAME_ATTRIBUTES,
    MODULE_FACADES,
    SAFE_DUNDER_ATTRIBUTES,
    SAFE_DUNDER_NAMES,
    WRAPPER_EXCLUDED,
    attribute_allowed,
    attribute_names,
    is_dunder,
    module_allowed,
)
from .guard_format import (
    FORMAT_ATTRIBUTE_GUARD,
    FORMAT_METHODS,
    checked_attribute,
    checked_format,
    checked_format_map,
    format_attribute,
)
from .prelude import reference_namespace


class GuardRefusal(Exception):
    """The guard refuses to compile environment source that names what untrusted code may
    not touch (the static layer's attribute and name rules, checked again inside the
    worker, so that they hold when the static layer was skipped or got it wrong)."""


#: What a source must contain for the guard to have anything to refuse or rewrite: one of
#: these words, or a dunder word outside the harmless ones. A source with none compiles as
#: it is, with no extra parse (substring tests and a scan for ``__``: about 10 us for a
#: typical source, against 300 us for one pattern trying every alternative at each
#: character).
_PLAIN_WORDS = tuple(sorted(FRAME_ATTRIBUTES | FORBIDDEN_PRIVATE_ATTRIBUTES | FORMAT_METHODS))
_DUNDER_WORD = re.compile(r"__\w*")
_HARMLESS_WORDS = SAFE_DUNDER_ATTRIBUTES | SAFE_DUNDER_NAMES | {"__future__"}


def _needs_tree(source: str) -> bool:
    if any(word in source for word in _PLAIN_WORDS):
        return True
    return "__" in source and any(w not in _HARMLESS_WORDS for w in set(_DUNDER_WORD.findall(source)))


def _refusal(node: ast.AST) -> str | None:
    """Why the guard refuses ``node`` itself, or None."""
    for attr in attribute_names(node):
        if not attribute_allowed(attr):
            return f"attribute {attr!r} is not accessible in the sandbox"
    if isinstance(node, ast.Name):
        if is_dunder(node.id) and node.id not in SAFE_DUNDER_NAMES:
            return f"the name {node.id!r} is not accessible in the sandbox"
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if node.name in FORBIDDEN_DUNDER_DEFINITIONS:
            return f"defining {node.name!r} is not allowed in the sandbox"
    elif isinstance(node, (ast.MatchAs, ast.MatchStar)):
        if node.name and is_dunder(node.name):
            return f"binding the dunder name {node.name!r} is not allowed in the sandbox"
    elif isinstance(node, ast.MatchMapping):
        if node.rest and is_dunder(node.rest):
            return f"binding the dunder name {node.rest!r} is not allowed in the sandbox"
    elif isinstance(node, ast.arg) and is_dunder(node.arg):
        return f"the parameter name {node.arg!r} is not allowed in the sandbox"
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            if alias.asname and is_dunder(alias.asname):
                return f"binding the dunder name {alias.asname!r} is not allowed in the sandbox"
    return None


def _guard_tree(tree: ast.AST) -> None:
    """Refuse what :func:`_refusal` names, then route every ``.format``/``.format_map``
    read through the guard. Iterative (a tree as deep as CPython compiles would overflow a
    recursive ``NodeTransformer``); new nodes take the location of the node they replace."""
    found: list[tuple[ast.AST, str, int | None, ast.Attribute]] = []
    refusals: list[tuple[int, int, str]] = []
    stack: list[tuple[ast.AST, ast.AST | None, str, int | None]] = [(tree, None, "", None)]
    node_type = ast.AST
    while stack:
        node, parent, field, index = stack.pop()
        why = _refusal(node)
        if why is not None:
            refusals.append((getattr(node, "lineno", 0), getattr(node, "col_offset", 0), why))
        if (
            parent is not None
            and type(node) is ast.Attribute
            and node.attr in FORMAT_METHODS
            and isinstance(node.ctx, ast.Load)
        ):
            found.append((parent, field, index, node))
        for name in node._fields:
            child = getattr(node, name, None)
            if isinstance(child, node_type):
                stack.append((child, node, name, None))
            elif type(child) is list:
                stack.extend((c, node, name, i) for i, c in enumerate(child) if isinstance(c, node_type))
    if refusals:
        line, _col, why = min(refusals)  # the first in the source, whatever the walk's order
        raise GuardRefusal(f"line {line}: {why}")
    # Children were found after their parents: replacing in reverse order rewrites an inner
    # read before the outer read that holds it (``s.format.format`` -> guard(guard(s)...)).
    for parent, field, index, node in reversed(found):
        guard_name = ast.copy_location(ast.Name(id=FORMAT_ATTRIBUTE_GUARD, ctx=ast.Load()), node)
        call = ast.copy_location(ast.Call(func=guard_name, args=[node.value, ast.copy_location(ast.Constant(node.attr), node)], keywords=[]), node)
        if index is None:
            setattr(parent, field, call)
        else:
            getattr(parent, field)[index] = call


def compile_guarded(source: str, filename: str) -> Any:
    """Code for ``source`` under the guard: :class:`GuardRefusal` if it names a dunder,
    frame or module-reaching attribute (``obj.attr`` or a match class pattern), a dunder
    name, or defines a forbidden hook; otherwise every read of an attribute named
    ``format`` or ``format_map`` goes through :func:`format_attribute`.

    Accepts every source CPython compiles (up to its own nesting limit): the tree is turned
    back into code with recursion headroom, since CPython converts a tree with a third of
    the depth its parser allows. A source with none of the words involved compiles as it is."""
    return _compile(source, filename, headroom=True)


def compile_for_worker(source: str, filename: str) -> types.CodeType | None:
    """:func:`compile_guarded`'s code for ``source``, made outside the worker (the pool
    does, to spare each worker the compiler's memory); ``None`` where the guard refuses the
    source (the worker refuses it again and says why) or where the tree is too deep to turn
    back into code without the recursion headroom, which only the worker may set (the limit
    is process-wide, and a process with other threads must not move it). Nothing of the
    source runs; the work is the static check's own (one parse, one iterative walk, one
    compile; with the collector paused as it pauses it). Raises what ``compile`` raises."""
    try:
        return _compile(source, filename, headroom=False)
    except (GuardRefusal, RecursionError):
        return None


def _compile(source: str, filename: str, headroom: bool) -> types.CodeType:
    if not _needs_tree(source):
        return compile(source, filename, "exec", flags=ENV_COMPILE_FLAGS, dont_inherit=True, optimize=ENV_OPTIMIZE)
    # The collector is paused while the tree is built and converted: its collections
    # would rescan every node built so far (a parse of 500 KB took four times as long).
    collecting = gc.isenabled()
    gc.disable()
    limit = sys.getrecursionlimit()
    try:
        try:
            tree = ast.parse(source, filename)
        except RecursionError:
            raise GuardRefusal(
                f"an expression or block nests deeper than CPython parses (limit about {3 * limit} levels "
                "in this interpreter); split it into smaller expressions"
            ) from None
        _guard_tree(tree)
        if headroom:
            sys.setrecursionlimit(max(limit, 4 * limit))
        return compile(tree, filename, "exec", flags=ENV_COMPILE_FLAGS, dont_inherit=True, optimize=ENV_OPTIMIZE)
    finally:
        if headroom:
            sys.setrecursionlimit(limit)
        if collecting:
            gc.enable()


#: Environments are compiled with postponed evaluation of annotations (PEP 563): they
#: always were, inheriting this module's and the worker's ``from __future__ import
#: annotations``; stated here so that the guarded and unguarded paths cannot drift apart.
ENV_COMPILE_FLAGS = __future__.annotations.compiler_flag
#: And with ``assert`` statements kept, as the zygote's interpreter (never run with ``-O``)
#: always compiled them; stated so that code compiled elsewhere for a worker is the same
#: whatever flags that process runs with.
ENV_OPTIMIZE = 0
#: The file name environment code is compiled under (tracebacks are cut to its frames).
ENV_FILENAME = "<env>"

#: The name the worker used before the guard's compile step refused anything.
guard_format_access = compile_guarded

_wrappers: dict[str, types.ModuleType] = {}
_builtins: dict[frozenset[str], dict[str, Any]] = {}
#: What environment code printed (bounded); never written to a file descriptor.
PRINTED: list[str] = []


def preimport(names: Iterable[str]) -> list[str]:
    """Import ``names`` into this process (the zygote, before forking); returns the names
    that failed to import. ``pkg.*`` entries import ``pkg``; a name with a facade
    (:data:`MODULE_FACADES`) imports its facade too."""
    failed = []
    for name in names:
        real = name[:-2] if name.endswith(".*") else name
        try:
            importlib.import_module(real)
            if real in MODULE_FACADES:
                importlib.import_module(MODULE_FACADES[real])
        except Exception:  # a broken helper module must not take the zygote down
            failed.append(name)
    return failed


def module_wrapper(name: str, allowed: frozenset[str]) -> types.ModuleType:
    """A module object holding the public attributes of the already-imported module
    ``name`` (of its facade, for a name in :data:`MODULE_FACADES`); attributes that are
    modules appear only if they are allow-listed too."""
    cache_key = name + "|" + ",".join(sorted(allowed))
    cached = _wrappers.get(cache_key)
    if cached is not None:
        return cached
    facade = MODULE_FACADES.get(name)
    real = sys.modules.get(facade or name)
    if real is None:
        raise ImportError(f"module {name!r} was not pre-imported by the sandbox")
    wrapper = types.ModuleType(name, getattr(real, "__doc__", None))
    exported = getattr(real, "__all__", None)
    names = [n for n in (exported if isinstance(exported, (list, tuple)) else dir(real)) if isinstance(n, str)]
    excluded = WRAPPER_EXCLUDED.get(name, frozenset())
    for attr in names:
        if attr.startswith("_") or attr in excluded or not hasattr(real, attr):
            continue
        value = getattr(real, attr)
        if isinstance(value, types.ModuleType):
            sub = f"{name}.{attr}"
            if value.__name__ == sub and module_allowed(sub, allowed):
                value = module_wrapper(sub, allowed)
            else:
                continue
        setattr(wrapper, attr, value)
    # Submodules imported directly (``import collections.abc``) are reached as attributes
    # (a facade's module has none: its name stands for the facade alone).
    prefix = name + "."
    for modname in list(sys.modules) if facade is None else ():
        if modname.startswith(prefix) and "." not in modname[len(prefix) :] and module_allowed(modname, allowed):
            setattr(wrapper, modname[len(prefix) :], module_wrapper(modname, allowed))
    _wrappers[cache_key] = wrapper
    return wrapper


class _Disarmed:
    """Whether :func:`disarm`'s replacements are in place in this process, and which they
    are: ``(owner, attribute, original, replacement)``, built once per process."""

    done = False
    replaced: list[tuple[Any, str, Any, Any]] = []


def _foreign_namespace(ns: Any) -> bool:
    """Whether ``ns`` is the namespace of a real module (other than the environment's)."""
    if ns is None:
        return False
    return any(getattr(m, "__dict__", None) is ns for name, m in list(sys.modules.items()) if name != "spade_env")


def _checked_forward_evaluate(original: Any) -> Any:
    def _evaluate(self: Any, globalns: Any, localns: Any, *rest: Any, **kw: Any) -> Any:
        # A forward reference is code: check it as the guard checks source, and evaluate
        # it only in the environment's own namespace or a plain dict, never with the real
        # builtins (eval() puts them into a globals dict that lacks ``__builtins__``).
        arg = self.__forward_arg__
        _guard_tree(ast.parse(arg.strip(), "<forward reference>", mode="eval"))
        module = self.__forward_module__
        if module is not None and module != "spade_env":
            raise GuardRefusal(f"forward reference {arg!r} names module {module!r}; the sandbox evaluates it only in the environment's namespace")
        if _foreign_namespace(globalns) or _foreign_namespace(localns):
            raise GuardRefusal(f"forward reference {arg!r} may not be evaluated in a module's namespace in the sandbox")
        if globalns is None and localns is None:
            globalns = localns = {}
        elif globalns is None:
            globalns = localns
        if isinstance(globalns, dict) and "__builtins__" not in globalns:
            globalns["__builtins__"] = make_builtins(frozenset())
        return original(self, globalns, localns, *rest, **kw)

    return _evaluate


def _checked_update_wrapper(original: Any, defaults: frozenset[str]) -> Any:
    def update_wrapper(wrapper: Any, wrapped: Any, assigned: Any = None, updated: Any = None) -> Any:
        assigned = tuple(assigned) if assigned is not None else original.__defaults__[0]
        updated = tuple(updated) if updated is not None else original.__defaults__[1]
        for attr in (*assigned, *updated):
            if not isinstance(attr, str) or (attr not in defaults and not attribute_allowed(attr)):
                raise AttributeError(f"update_wrapper() may not copy attribute {attr!r} in the sandbox")
        return original(wrapper, wrapped, assigned, updated)

    update_wrapper.__doc__ = original.__doc__
    return update_wrapper


def _checked_fields(original: Any) -> Any:
    def fields(class_or_instance: Any) -> tuple[Any, ...]:
        result = original(class_or_instance)
        for f in result:
            if not isinstance(f.name, str) or not attribute_allowed(f.name):
                raise TypeError(f"dataclass field {f.name!r} is not accessible in the sandbox")
        return result

    fields.__doc__ = original.__doc__
    return fields


def _user_string_method(name: str) -> Any:
    checked = checked_format if name == "format" else checked_format_map

    def method(self: Any, /, *args: Any, **kwargs: Any) -> str:
        data = self.data
        if isinstance(data, str):
            return checked(data, *args, **kwargs)
        return format_attribute(data, name)(*args, **kwargs)

    method.__name__ = name
    return method


def disarm() -> None:
    """Close, in this process, the allowed modules' paths from a string to code or to a
    module's namespace that environment code could reach through public names. For the
    worker only (it changes shared library classes; never call it in the caller's process):

    * ``typing.ForwardRef._evaluate`` (``get_type_hints``, ``singledispatch``...) checks the
      reference as the guard checks source, refuses module namespaces and evaluates with the
      guard's builtins, never the real ones;
    * ``collections.UserString.format``/``format_map`` are the checked ``str.format``;
    * ``functools.update_wrapper`` (and so ``wraps``) copies only allowed attribute names;
    * ``dataclasses.fields`` (and so ``asdict``/``astuple``/``replace``) refuses field names
      that are not allowed attributes.

    Module wrappers and builtins already built are updated too. Idempotent. The zygote
    calls it before it forks (so that no worker writes these pages of its own); each guarded
    worker calls it again, which costs nothing there."""
    if _Disarmed.done:
        return
    if not _Disarmed.replaced:
        import collections
        import dataclasses
        import functools
        import typing

        defaults = frozenset(functools.WRAPPER_ASSIGNMENTS) | frozenset(functools.WRAPPER_UPDATES)
        _Disarmed.replaced = [
            (owner, attr, owner.__dict__[attr], replacement)
            for owner, attr, replacement in (
                (typing.ForwardRef, "_evaluate", _checked_forward_evaluate(typing.ForwardRef._evaluate)),
                (collections.UserString, "format", _user_string_method("format")),
                (collections.UserString, "format_map", _user_string_method("format_map")),
                (functools, "update_wrapper", _checked_update_wrapper(functools.update_wrapper, defaults)),
                (dataclasses, "fields", _checked_fields(dataclasses.fields)),
            )
        ]
    for owner, attr, original, replacement in _Disarmed.replaced:
        setattr(owner, attr, replacement)
        if isinstance(owner, type):
            continue  # methods of a class: no wrapper or builtin holds them
        for wrapper in _wrappers.values():
            if wrapper.__dict__.get(attr) is original:
                setattr(wrapper, attr, replacement)
        for namespace in _builtins.values():
            for key, value in list(namespace.items()):
                if value is original:
                    namespace[key] = replacement
    _Disarmed.done = True


def rearm() -> bool:
    """Undo :func:`disarm` in this process: the library's own functions are back on the
    classes and modules (module wrappers and builtins keep the checked ones). For trusted
    code only: the zygote's imports of helper modules (which run as they would in any
    process), and a worker started without the guard, whose environment runs with the real
    builtins and so sees the library as it is. Whether it undid anything (``False``: this
    process was not disarmed)."""
    if not _Disarmed.done:
        return False
    for owner, attr, original, _replacement in _Disarmed.replaced:
        setattr(owner, attr, original)
    _Disarmed.done = False
    return True


def make_builtins(allowed: frozenset[str]) -> dict[str, Any]:
    """The ``__builtins__`` mapping for environment code (built once per allow-set, so the
    zygote can prepare the default one before forking)."""
    cached = _builtins.get(allowed)
    if cached is not None:
        return cached
    output = PRINTED
    safe = {k: v for k, v in vars(builtins).items() if k not in FORBIDDEN_BUILTINS and not k.startswith("_")}
    safe["__build_class__"] = builtins.__build_class__
    safe["__name__"] = "builtins"
    # The reference loader's names (``random``, ``defaultdict``, ``List``...), bound to the
    # same wrapped modules an import hands out; the environment's own names shadow them.
    safe.update(reference_namespace(allowed, module_wrapper))

    def guarded_import(
        name: str,
        globals: Any = None,
        locals: Any = None,
        fromlist: Any = (),
        level: int = 0,
    ) -> types.ModuleType:
        if level != 0:
            raise ImportError("relative imports are not allowed in the sandbox")
        if not module_allowed(name, allowed):
            raise ImportError(f"import of {name!r} is not allowed in the sandbox")
        if fromlist:
            return module_wrapper(name, allowed)
        top = name.split(".", 1)[0]
        if not module_allowed(top, allowed):
            # ``import a.b`` binds ``a``; hand out a namespace holding only ``b``.
            holder = types.ModuleType(top)
            node = holder
            parts = name.split(".")
            for i in range(1, len(parts)):
                sub = ".".join(parts[: i + 1])
                child = module_wrapper(sub, allowed) if i == len(parts) - 1 else types.ModuleType(sub)
                setattr(node, parts[i], child)
                node = child
            return holder
        return module_wrapper(top, allowed)

    def guarded_getattr(obj: Any, name: str, *default: Any) -> Any:
        if not isinstance(name, str) or not attribute_allowed(name):
            raise AttributeError(f"attribute {name!r} is not accessible in the sandbox")
        return checked_attribute(getattr(obj, name, *default))

    def guarded_hasattr(obj: Any, name: str) -> bool:
        if not isinstance(name, str) or not attribute_allowed(name):
            return False
        return hasattr(obj, name)

    def captured_print(*args: Any, sep: str | None = " ", end: str | None = "\n", **_: Any) -> None:
        # Environment prints go to a small bounded buffer, never to a file descriptor.
        if len(output) < 200:
            output.append((sep or " ").join(str(a) for a in args)[:2000])

    safe["__import__"] = guarded_import
    safe["getattr"] = guarded_getattr
    safe["hasattr"] = guarded_hasattr
    safe["print"] = captured_print
    safe[FORMAT_ATTRIBUTE_GUARD] = format_attribute
    _builtins[allowed] = safe
    return safe
