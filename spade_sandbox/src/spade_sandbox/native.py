"""Which step fast path is active: the optional C extension ``spade_sandbox._fast``, or the
pure-Python code it mirrors.

Loaded by ``spade_core.c_extensions.load`` (the loader ``spade_core._speedups`` shares,
reached through :mod:`.core_rules` so that a worker does not import ``spade_core``).
``SPADE_SANDBOX_NO_C=1`` forces the pure-Python path; it is read once, when this module is
first imported (a zygote reads its own copy of the environment when it starts, so set it
before the pool starts).

Every C function returns ``None`` or a code for anything it does not handle itself, and the
Python code continues from there, so both paths give the same results and errors.

Imported by workers (through the zygote, before hardening): standard library only.
"""

from __future__ import annotations

from .core_rules import c_extensions

#: The environment variable that forces the pure-Python path.
DISABLE_VARIABLE = "SPADE_SANDBOX_NO_C"

_loaded = c_extensions.load("spade_sandbox._fast", DISABLE_VARIABLE, "spade_sandbox")

#: Whether ``SPADE_SANDBOX_NO_C`` forced the pure-Python path in this process (the pool
#: hands the choice to its zygote, whose environment is otherwise empty).
disabled = _loaded.disabled
#: The extension module, or ``None`` when the pure-Python path runs; and why.
fast, reason = _loaded.module, _loaded.reason


def active() -> bool:
    """Whether the C fast path is in use in this process."""
    return fast is not None
