"""Optional distributed environment stepping on Ray (the ``ray`` extra).

:class:`RayEnvPool` runs sandbox pools on Ray actors behind the ``SandboxPool`` interface;
:func:`env_backend_for` / :func:`build_env_backend` pick the local pool or the Ray one from
configuration. Importing this package imports neither ray nor the executor (names load
lazily): only building a :class:`RayEnvPool` imports ray, so the single-machine path never
needs it. See ``docs/distributed.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .settings import RaySettings, RolloutExecutorSettings

if TYPE_CHECKING:
    from ..config import SelfPlayConfig
    from .executor import RAY_INSTALL_HINT, RayEnvHandle, RayEnvPool, RayUnavailable

_LAZY = {"RAY_INSTALL_HINT", "RayEnvHandle", "RayEnvPool", "RayUnavailable"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(".executor", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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

    rollout = rollout or RolloutExecutorSettings()
    limits = SandboxLimits(call_timeout_s=step_timeout_s, memory_mb=memory_mb)
    if rollout.executor == "ray":
        from .executor import RayEnvPool

        return RayEnvPool(rollout.ray, limits=limits, backend=backend, allow_insecure=allow_insecure)
    from spade_sandbox.pool import SandboxPool

    return SandboxPool(limits=limits, backend=backend, allow_insecure=allow_insecure)


def env_backend_for(config: SelfPlayConfig) -> Any:
    """The environment pool of a self-play run: ``config.rollout`` picks the executor,
    ``config.sandbox`` the limits (what ``SelfPlayRun`` builds when given no backend)."""
    sb = config.sandbox
    return build_env_backend(
        getattr(config, "rollout", None),
        step_timeout_s=sb.step_timeout_s,
        memory_mb=sb.memory_mb,
        backend=sb.backend,
        allow_insecure=sb.allow_insecure,
    )


__all__ = [
    "RAY_INSTALL_HINT",
    "RayEnvHandle",
    "RayEnvPool",
    "RaySettings",
    "RayUnavailable",
    "RolloutExecutorSettings",
    "build_env_backend",
    "env_backend_for",
]
