"""The one loader of SPADE's optional C extensions (``spade_core._speedups``,
``spade_sandbox._fast``).

Each extension is built by ``pip install`` when a C compiler is there (``optional=True`` in
its package's setup.py: without one the install still succeeds) and mirrors pure-Python
code that stays the reference. An environment variable forces the Python path; it is read
once, when the extension is loaded, so set it before that. :func:`load` never fails: an
extension that is disabled or missing comes back as ``None`` with the reason.

Standard library only, and it imports nothing else of ``spade_core``: the sandbox's
zygote and workers load it without running ``spade_core``'s package initialiser (see
``spade_sandbox.core_rules``).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType


class OptionalExtension:
    """What :func:`load` found. ``module`` is ``None`` when the Python path runs;
    ``reason`` says why (``"active"`` otherwise); ``disabled``: the variable forced it.

    A plain class, not a dataclass: building a dataclass runs ``exec`` for each generated
    method, about 0.5 ms of every zygote's boot."""

    __slots__ = ("disabled", "module", "reason")

    def __init__(self, module: ModuleType | None, reason: str, disabled: bool) -> None:
        self.module = module
        self.reason = reason
        self.disabled = disabled

    def __repr__(self) -> str:
        return f"OptionalExtension(module={self.module!r}, reason={self.reason!r}, disabled={self.disabled})"

    @property
    def active(self) -> bool:
        return self.module is not None


def disabled_by(variable: str) -> bool:
    """Whether ``variable`` forces the Python path (set to anything but empty or ``0``)."""
    return os.environ.get(variable, "") not in ("", "0")


def load(module: str, variable: str, distribution: str) -> OptionalExtension:
    """The extension ``module`` (a dotted name), unless ``variable`` disables it or it was
    not built (then the reason names ``distribution`` to reinstall with a compiler)."""
    if disabled_by(variable):
        return OptionalExtension(None, f"disabled by {variable}={os.environ[variable]}", True)
    try:
        found = importlib.import_module(module)
    except ImportError as exc:
        return OptionalExtension(None, f"not built ({exc}); reinstall {distribution} with a C compiler present", False)
    return OptionalExtension(found, "active", False)
