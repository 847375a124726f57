"""The rules the sandbox shares with ``spade_core``, as a worker may import them.

``spade_core.contract`` (the environment contract's checks) and ``spade_core.c_extensions``
(the optional-C loader) are the one home of their rules; the pool, the zygote and every
worker apply them too. A zygote must not ``import spade_core``, though: the package's
initialiser registers every environment of the active store with Gymnasium (a zygote is a
fresh ``python -I -S`` that starts in about 0.1 s, and its workers inherit its heap). Both
modules are written for this: standard library only, importing nothing else of
``spade_core``. So, in a process where ``spade_core`` is not imported yet, each is loaded
from its file under its own name, and the package itself is left unimported; where it is
(the pool's process), the ordinary import is used. Either way ``sys.modules`` then holds
the one module under its real name, so a later ``import spade_core`` (a domain's helper
module pre-imported by a zygote) finds it there and does not load a second copy.

Standard library only (imported by the zygote and workers).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
from types import ModuleType

#: The ``spade_core`` modules written to be loaded without their package.
STANDALONE = frozenset({"contract", "c_extensions"})


def core_module(name: str) -> ModuleType:
    """``spade_core.<name>`` (one of :data:`STANDALONE`), imported without running
    ``spade_core/__init__.py`` when the package is not imported yet."""
    if name not in STANDALONE:
        raise ValueError(f"spade_core.{name} is not written to load without its package (one of {sorted(STANDALONE)})")
    full = f"spade_core.{name}"
    module = sys.modules.get(full)
    if module is not None:
        return module
    if "spade_core" in sys.modules:
        return importlib.import_module(full)
    package = importlib.machinery.PathFinder.find_spec("spade_core")
    if package is None or not package.submodule_search_locations:
        raise ImportError("spade_core is not installed where this interpreter looks (sys.path)")
    spec = importlib.machinery.PathFinder.find_spec(full, list(package.submodule_search_locations))
    if spec is None or spec.loader is None:
        raise ImportError(f"{full} not found in {list(package.submodule_search_locations)}")
    # What importlib.util.module_from_spec does for a source file (importlib.util itself
    # is not imported by a zygote, and would cost it more than this module).
    module = ModuleType(full)
    module.__spec__ = spec
    module.__loader__ = spec.loader
    module.__package__ = "spade_core"
    module.__file__ = spec.origin
    if spec.cached:
        module.__cached__ = spec.cached
    sys.modules[full] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[full]
        raise
    return module


contract = core_module("contract")
c_extensions = core_module("c_extensions")
