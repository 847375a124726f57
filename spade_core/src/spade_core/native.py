"""Which registration path is active: the optional C extension ``spade_core._speedups``, or
the pure-Python code it mirrors (in :mod:`spade_core.registry`).

Loaded by :func:`spade_core.c_extensions.load`, the loader the sandbox's ``_fast`` shares.
``SPADE_CORE_NO_C=1`` forces the pure-Python path; it is read once, when this module is
first imported (by ``import spade_core``), so set it before that.

Standard library only: imported on ``import spade_core``'s path.
"""

from __future__ import annotations

from . import c_extensions

#: The environment variable that forces the pure-Python path.
DISABLE_VARIABLE = "SPADE_CORE_NO_C"

_loaded = c_extensions.load("spade_core._speedups", DISABLE_VARIABLE, "spade_core")

#: Whether ``SPADE_CORE_NO_C`` forced the pure-Python path in this process.
disabled = _loaded.disabled
#: The extension module, or ``None`` when the pure-Python path runs; and why.
speedups, reason = _loaded.module, _loaded.reason


def active() -> bool:
    """Whether the C registration path is in use in this process."""
    return speedups is not None
