"""The names environment code finds without importing them: the reference loader's namespace.

The reference implementation executes designer code in a namespace that already holds the
common standard-library modules and names, so the environments written for it use
``random``, ``defaultdict`` or ``List`` without an import. Here the same names are bound,
each to exactly what an ``import`` in the sandbox would hand out: the guard's wrapper of
the allow-listed module (:func:`spade_sandbox.guard.module_wrapper`, passed in by the
guard), or an attribute read from that wrapper. A name whose module is not allowed for the environment (``np`` without
``numpy`` in the domain's modules) is simply not bound.

A domain's helper module (one of its allowed modules beyond the standard ones) may list
further names in a module attribute named :data:`PRELUDE_ATTRIBUTE`: the tool-use domain's
``spade_tooluse.base`` lists ``ToolUseBaseEnv``, the base the reference designer's
tool-use environments subclass without importing it.

The names are offered as builtins, so the environment's own imports and definitions
shadow them as usual. Standard library only (imported by the zygote and workers).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

#: Module names bound as modules: name in the environment's namespace -> module.
REFERENCE_MODULES: dict[str, str] = {
    "random": "random",
    "re": "re",
    "math": "math",
    "json": "json",
    "string": "string",
    "itertools": "itertools",
    "functools": "functools",
    "collections": "collections",
    "heapq": "heapq",
    "copy": "copy",
    # only where the environment's domain allows numpy
    "np": "numpy",
}

#: Names bound to one attribute of a module: name -> (module, attribute).
REFERENCE_ATTRIBUTES: dict[str, tuple[str, str]] = {
    **{n: ("collections", n) for n in ("deque", "defaultdict", "Counter", "OrderedDict", "namedtuple")},
    **{
        n: ("typing", n)
        for n in (
            "Any",
            "Callable",
            "ClassVar",
            "DefaultDict",
            "Deque",
            "Dict",
            "FrozenSet",
            "Generator",
            "Iterable",
            "Iterator",
            "List",
            "Literal",
            "Mapping",
            "NamedTuple",
            "Optional",
            "Sequence",
            "Set",
            "Tuple",
            "Type",
            "TypeVar",
            "Union",
            "cast",
        )
    },
}

#: Attribute of a domain helper module naming the names it adds to the prelude.
PRELUDE_ATTRIBUTE = "SANDBOX_PRELUDE"

_cache: dict[tuple[frozenset[str], Any], dict[str, Any]] = {}


def prelude_names(allowed: frozenset[str] | set[str]) -> list[str]:
    """The names :func:`reference_namespace` binds for ``allowed`` modules (for docs and
    tests: the names themselves, whatever they are bound to)."""
    from .allowlist import module_allowed

    out = [n for n, mod in REFERENCE_MODULES.items() if module_allowed(mod, allowed)]
    out += [n for n, (mod, _) in REFERENCE_ATTRIBUTES.items() if module_allowed(mod, allowed)]
    for mod in sorted(allowed):
        extra = getattr(sys.modules.get(mod), PRELUDE_ATTRIBUTE, ())
        out += [n for n in extra if isinstance(n, str) and n.isidentifier() and not n.startswith("_")]
    return out


def reference_namespace(allowed: frozenset[str], wrap: Callable[[str, frozenset[str]], Any]) -> dict[str, Any]:
    """``{name: value}`` of the prelude for an environment whose allowed modules are
    ``allowed``; each module is ``wrap(module, allowed)`` (the guard passes its
    :func:`~spade_sandbox.guard.module_wrapper`: what ``import`` gives environment code).

    Modules that are allowed but not imported in this process are left out (the zygote
    pre-imports every allowed module before a worker loads code), and so are modules
    ``wrap`` fails on. Built once per allow-set and ``wrap``.
    """
    key = (allowed, wrap)
    cached = _cache.get(key)
    if cached is not None:
        return cached
    from .allowlist import module_allowed

    wrappers: dict[str, Any] = {}

    def wrapped(mod: str) -> Any:
        if mod not in wrappers:
            found = None
            if mod in sys.modules and module_allowed(mod, allowed):
                try:
                    found = wrap(mod, allowed)
                except Exception:  # a module the guard cannot wrap is one an import fails on too
                    found = None
            wrappers[mod] = found
        return wrappers[mod]

    out: dict[str, Any] = {}
    for name, mod in REFERENCE_MODULES.items():
        w = wrapped(mod)
        if w is not None:
            out[name] = w
    for name, (mod, attr) in REFERENCE_ATTRIBUTES.items():
        w = wrapped(mod)
        if w is not None and hasattr(w, attr):
            out[name] = getattr(w, attr)
    for mod in sorted(allowed):
        extra = getattr(sys.modules.get(mod), PRELUDE_ATTRIBUTE, None)
        if not isinstance(extra, (tuple, list)):
            continue
        w = wrapped(mod)
        for name in extra:
            if isinstance(name, str) and name.isidentifier() and not name.startswith("_") and w is not None and hasattr(w, name):
                out[name] = getattr(w, name)
    _cache[key] = out
    return out
