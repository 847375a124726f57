"""Runtime guard inside the worker: curated builtins and allow-listed module wrappers.

Environment code runs with a ``__builtins__`` that lacks eval/exec/open/... and whose
``__import__`` hands out *wrappers* of pre-imported allow-listed modules. A wrapper exposes
only a module's public, non-module attributes, closing escapes such as ``dataclasses.sys``,
``json.codecs`` or ``typing.sys``. ``getattr``/``hasattr`` refuse dunder and frame names.
``str.format``/``str.format_map`` are reached only through :func:`checked_format` and
:func:`checked_format_map`, which refuse format fields that walk to dunder or frame
attributes (``"{0.__class__}"`` built at run time, which the static layer cannot see):
:func:`guard_format_access` rewrites every ``.format``/``.format_map`` attribute read of
the environment's source into a call that hands out the checked versions.
Like the static layer, this is a filter; the OS layers are the boundary.

Imported by the zygote and workers: standard library only.
"""

from __future__ import annotations

import _string
import ast
import builtins
import importlib
import sys
import types
from collections.abc import Iterable
from typing import Any

from .allowlist import FORBIDDEN_BUILTINS, WRAPPER_EXCLUDED, attribute_allowed, module_allowed
from .prelude import reference_namespace

#: The builtin through which rewritten ``.format``/``.format_map`` reads go.
FORMAT_ATTRIBUTE_GUARD = "__spade_format_attribute__"
_FORMAT_METHODS = frozenset({"format", "format_map"})
_STR_FORMAT = str.format
_STR_FORMAT_MAP = str.format_map
_BUILTIN_METHOD = type("".format)


def check_format_string(fmt: str, depth: int = 0) -> None:
    """Raise :class:`AttributeError` if a replacement field of ``fmt`` (or of a nested
    field inside a format spec) reads an attribute that untrusted code may not read.
    Malformed strings pass: ``str.format`` itself reports them."""
    try:
        fields = list(_string.formatter_parser(fmt))
    except ValueError:
        return
    for _literal, field, spec, _conversion in fields:
        if field:
            try:
                _first, rest = _string.formatter_field_name_split(field)
                parts = list(rest)
            except ValueError:
                parts = []
            for is_attribute, key in parts:
                if is_attribute and not attribute_allowed(str(key)):
                    raise AttributeError(f"format field {field!r} reaches attribute {key!r}, which is not accessible in the sandbox")
        if spec and "{" in spec and depth < 2:
            check_format_string(spec, depth + 1)


def checked_format(fmt: str, /, *args: Any, **kwargs: Any) -> str:
    """``str.format`` after :func:`check_format_string`."""
    if isinstance(fmt, str):
        check_format_string(fmt)
    return _STR_FORMAT(fmt, *args, **kwargs)


def checked_format_map(fmt: str, mapping: Any, /) -> str:
    """``str.format_map`` after :func:`check_format_string`."""
    if isinstance(fmt, str):
        check_format_string(fmt)
    return _STR_FORMAT_MAP(fmt, mapping)


def _bound(method: Any, fmt: str) -> Any:
    def bound(*args: Any, **kwargs: Any) -> str:
        return method(fmt, *args, **kwargs)

    bound.__name__ = method.__name__.replace("checked_", "")
    return bound


def checked_attribute(value: Any) -> Any:
    """``value`` itself, unless it is ``str.format``/``str.format_map`` (unbound, or bound
    to a string): then the checked equivalent."""
    if value is _STR_FORMAT:
        return checked_format
    if value is _STR_FORMAT_MAP:
        return checked_format_map
    if type(value) is _BUILTIN_METHOD and value.__name__ in _FORMAT_METHODS:
        owner = value.__self__  # type: ignore[attr-defined]  # a builtin method's receiver
        if isinstance(owner, str):
            method = checked_format if value.__name__ == "format" else checked_format_map
            if getattr(type(owner), value.__name__, None) in (_STR_FORMAT, _STR_FORMAT_MAP):
                return _bound(method, owner)
    return value


def format_attribute(obj: Any, name: str) -> Any:
    """What ``obj.format`` / ``obj.format_map`` evaluates to in environment code."""
    return checked_attribute(getattr(obj, name))


class _FormatAccess(ast.NodeTransformer):
    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if node.attr in _FORMAT_METHODS and isinstance(node.ctx, ast.Load):
            call = ast.Call(
                func=ast.Name(id=FORMAT_ATTRIBUTE_GUARD, ctx=ast.Load()),
                args=[node.value, ast.Constant(node.attr)],
                keywords=[],
            )
            return ast.copy_location(call, node)
        return node


def guard_format_access(source: str, filename: str) -> Any:
    """Code for ``source`` in which every read of an attribute named ``format`` or
    ``format_map`` goes through :func:`format_attribute` (source that never mentions them
    compiles unchanged, so the common case costs no extra parse)."""
    if "format" not in source:
        return compile(source, filename, "exec")
    tree = _FormatAccess().visit(ast.parse(source, filename))
    return compile(ast.fix_missing_locations(tree), filename, "exec")

_wrappers: dict[str, types.ModuleType] = {}
_builtins: dict[frozenset[str], dict[str, Any]] = {}
#: What environment code printed (bounded); never written to a file descriptor.
PRINTED: list[str] = []


def preimport(names: Iterable[str]) -> list[str]:
    """Import ``names`` into this process (the zygote, before forking); returns the names
    that failed to import. ``pkg.*`` entries import ``pkg``."""
    failed = []
    for name in names:
        real = name[:-2] if name.endswith(".*") else name
        try:
            importlib.import_module(real)
        except Exception:  # a broken helper module must not take the zygote down
            failed.append(name)
    return failed


def module_wrapper(name: str, allowed: frozenset[str]) -> types.ModuleType:
    """A module object holding the public attributes of the already-imported module
    ``name``; attributes that are modules appear only if they are allow-listed too."""
    cache_key = name + "|" + ",".join(sorted(allowed))
    cached = _wrappers.get(cache_key)
    if cached is not None:
        return cached
    real = sys.modules.get(name)
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
    # Submodules imported directly (``import collections.abc``) are reached as attributes.
    prefix = name + "."
    for modname in list(sys.modules):
        if modname.startswith(prefix) and "." not in modname[len(prefix) :] and module_allowed(modname, allowed):
            setattr(wrapper, modname[len(prefix) :], module_wrapper(modname, allowed))
    _wrappers[cache_key] = wrapper
    return wrapper


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
    safe.update(reference_namespace(allowed))

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
