"""Optional distributed environment stepping on Ray (the ``ray`` extra).

:class:`RayEnvPool` runs sandbox pools on Ray actors behind the ``SandboxPool`` interface;
:func:`build_env_backend` picks the local pool or the Ray one from configuration. Importing
this package does not import ray: only building a :class:`RayEnvPool` does, so the
single-machine path never needs it. See ``docs/distributed.md``.
"""

from __future__ import annotations

from typing import Any

from .executor import RAY_INSTALL_HINT, RayEnvHandle, RayEnvPool, RayUnavailable
from .settings import RaySettings, RolloutExecutorSettings


def build_env_backend(
    rollout: RolloutExecutorSettings | None,
    *,
    step_timeout_s: float = 30.0,
    memory_mb: int = 512,
    backend: str = "native",
    allow_insecure: bool = False,
) -> Any:
    """The pool that runs a self-play run's environments: a local ``SandboxPool`` for
    ``executor = "local"`` (ray is not imported), a :class:`RayEnvPool` for ``"ray"``.

    The keyword arguments are the run's ``[selfplay.sandbox]`` settings; every sandbox
    actor applies the same limits as the local pool would.
    """
    from spade_sandbox.limits import SandboxLimits
    from spade_sandbox.pool import SandboxPool

    rollout = rollout or RolloutExecutorSettings()
    limits = SandboxLimits(call_timeout_s=step_timeout_s, memory_mb=memory_mb)
    if rollout.executor == "ray":
        return RayEnvPool(rollout.ray, limits=limits, backend=backend, allow_insecure=allow_insecure)
    return SandboxPool(limits=limits, backend=backend, allow_insecure=allow_insecure)


__all__ = [
    "RAY_INSTALL_HINT",
    "RayEnvHandle",
    "RayEnvPool",
    "RaySettings",
    "RayUnavailable",
    "RolloutExecutorSettings",
    "build_env_backend",
]
