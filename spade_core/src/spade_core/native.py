"""Which registration path is active: the optional C extension ``spade_core._speedups``, or
the pure-Python code it mirrors (in :mod:`spade_core.registry`).

The extension is built by ``pip install`` when a C compiler is there (``optional=True`` in
setup.py: without one the install still succeeds). ``SPADE_CORE_NO_C=1`` forces the
pure-Python path; it is read once, when this module is first imported (by
``import spade_core``), so set it before that.

Standard library only: imported on ``import spade_core``'s path.
"""

from __future__ import annotations

import os
from types import ModuleType

#: The environment variable that forces the pure-Python path.
DISABLE_VARIABLE = "SPADE_CORE_NO_C"

#: Whether ``SPADE_CORE_NO_C`` forced the pure-Python path in this process.
disabled = os.environ.get(DISABLE_VARIABLE, "") not in ("", "0")


def _load() -> tuple[ModuleType | None, str]:
    if disabled:
        return None, f"disabled by {DISABLE_VARIABLE}={os.environ[DISABLE_VARIABLE]}"
    try:
        from . import _speedups
    except ImportError as exc:
        return None, f"not built ({exc}); reinstall spade_core with a C compiler present"
    return _speedups, "active"


#: The extension module, or ``None`` when the pure-Python path runs.
speedups, reason = _load()


def active() -> bool:
    """Whether the C registration path is in use in this process."""
    return speedups is not None
