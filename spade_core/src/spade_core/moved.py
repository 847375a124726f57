"""The old import paths of the modules that moved to the application layer, kept working
with a warning.

The application modules (the CLI and its commands, import/export, the Hub, the evaluation
harness, ``spade play``, the catalog, run files, HTTP reads) lived beside the kernel as
``spade_core.<name>`` until they moved to :mod:`spade_core.app`. Importing an old path
still gives the very module object of the new one (so ``mock.patch`` targets, pickles and
``isinstance`` checks agree) and warns with a :class:`FutureWarning` naming the new path:
shown by default, pointing at the line that imported it.

This module names the moved modules as strings only; the kernel imports nothing of the
application layer (``tests/test_architecture.py``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

#: ``spade_core.<old>`` -> ``spade_core.app.<old>``, for every module that moved.
MOVED: tuple[str, ...] = (
    "builtin",
    "catalog",
    "cli",
    "commands",
    "dataset_files",
    "eval_harness",
    "exporter",
    "http_reads",
    "hub",
    "hub_layout",
    "importer",
    "jsonl",
    "play",
    "plugin_template",
    "published_pools",
)
_OLD = {f"spade_core.{name}": f"spade_core.app.{name}" for name in MOVED}


def _stacklevel() -> int:
    """The warning's stack level that names the frame doing the import. Frames of this
    module and of :func:`importlib.import_module` are counted and skipped; the import
    machinery's own (``_bootstrap``) are skipped uncounted, as :func:`warnings.warn` does
    not count them once the level is above 1."""
    level = 1
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if "importlib" in name and "_bootstrap" in name:
            pass
        elif name in (__file__, importlib.__file__):
            level += 1
        else:
            break
        frame = frame.f_back
    return level


class _Alias(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # a plain placeholder; exec_module puts the real module in its place

    def exec_module(self, module: ModuleType) -> None:
        warnings.warn(
            f"{module.__name__} moved to {self.new}; import that (the old path will be removed)",
            FutureWarning,
            stacklevel=_stacklevel(),
        )
        # The import system returns whatever sys.modules holds under the name once this
        # returns: the real module, not the placeholder.
        sys.modules[module.__name__] = importlib.import_module(self.new)


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds ``spade_core.<old>`` for each moved module (after every other finder)."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        new = _OLD.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (``import spade_core`` does)."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())


__all__ = ["MOVED", "MovedModuleFinder", "install"]
