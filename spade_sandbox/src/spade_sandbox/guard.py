"""Runtime guard inside the worker: curated builtins and allow-listed module wrappers.

Environment code runs with a ``__builtins__`` that lacks eval/exec/open/... and whose
``__import__`` hands out *wrappers* of pre-imported allow-listed modules. A wrapper exposes
only a module's public, non-module attributes, closing escapes such as ``dataclasses.sys``,
``json.codecs`` or ``typing.sys``. ``getattr``/``hasattr`` refuse dunder and frame names.
Like the static layer, this is a filter; the OS layers are the boundary.

Imported by the zygote and workers: standard library only.
"""

from __future__ import annotations

import builtins
import importlib
import sys
import types
from collections.abc import Iterable
from typing import Any

from .allowlist import FORBIDDEN_BUILTINS, WRAPPER_EXCLUDED, attribute_allowed, module_allowed

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
        return getattr(obj, name, *default)

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
    _builtins[allowed] = safe
    return safe
