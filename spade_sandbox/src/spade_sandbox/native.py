"""Which step fast path is active: the optional C extension ``spade_sandbox._fast``, or the
pure-Python code it mirrors.

The extension is built by ``pip install`` when a C compiler is there (``optional=True`` in
setup.py: without one the install still succeeds). ``SPADE_SANDBOX_NO_C=1`` forces the
pure-Python path; it is read once, when this module is first imported (a zygote reads its
own copy of the environment when it starts, so set it before the pool starts).

Every C function returns ``None`` or a code for anything it does not handle itself, and the
Python code continues from there, so both paths give the same results and errors.

Imported by workers (through the zygote, before hardening): standard library only.
"""

from __future__ import annotations

import os
from types import ModuleType

#: The environment variable that forces the pure-Python path.
DISABLE_VARIABLE = "SPADE_SANDBOX_NO_C"


#: Whether ``SPADE_SANDBOX_NO_C`` forced the pure-Python path in this process (the pool
#: hands the choice to its zygote, whose environment is otherwise empty).
disabled = os.environ.get(DISABLE_VARIABLE, "") not in ("", "0")


def _load() -> tuple[ModuleType | None, str]:
    if disabled:
        return None, f"disabled by {DISABLE_VARIABLE}={os.environ[DISABLE_VARIABLE]}"
    try:
        from . import _fast
    except ImportError as exc:
        return None, f"not built ({exc}); reinstall spade_sandbox with a C compiler present"
    return _fast, "active"


#: The extension module, or ``None`` when the pure-Python path runs.
fast, reason = _load()


def active() -> bool:
    """Whether the C fast path is in use in this process."""
    return fast is not None
