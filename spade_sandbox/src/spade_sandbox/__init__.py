"""spade_sandbox: run untrusted environment code isolated, limited and killable.

Public API (imported lazily so that ``import spade_sandbox`` — which every sandbox worker
does — stays light)::

    from spade_sandbox import (SandboxPool, SandboxLimits, SandboxedEnv, EnvHandle,
                               check_source, StaticReport, default_pool, sandbox_status)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .default import default_pool
    from .env import SandboxedEnv
    from .limits import SandboxLimits
    from .pool import EnvHandle, SandboxPool, WorkerInfo
    from .static import StaticFinding, StaticReport, check_source
    from .status import SandboxStatus, sandbox_status

_EXPORTS = {
    "SandboxPool": "pool",
    "EnvHandle": "pool",
    "WorkerInfo": "pool",
    "default_pool": "default",
    "SandboxLimits": "limits",
    "SandboxedEnv": "env",
    "check_source": "static",
    "StaticReport": "static",
    "StaticFinding": "static",
    "sandbox_status": "status",
    "SandboxStatus": "status",
}

__all__ = [
    "EnvHandle",
    "SandboxLimits",
    "SandboxPool",
    "SandboxStatus",
    "SandboxedEnv",
    "StaticFinding",
    "StaticReport",
    "WorkerInfo",
    "check_source",
    "default_pool",
    "sandbox_status",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'spade_sandbox' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
