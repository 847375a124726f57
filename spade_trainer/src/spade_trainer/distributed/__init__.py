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
    from spade_sandbox.launcher import SandboxLauncher

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
    rollout: RolloutExecutorSettings | None, launcher: SandboxLauncher | None = None, *, step_timeout_s: float = 30.0
) -> Any:
    """The pool that runs a self-play run's environments: a local ``SandboxPool`` for
    ``executor = "local"`` (ray is not imported), a :class:`RayEnvPool` for ``"ray"``.

    ``launcher`` holds the run's sandbox settings (``None``: ``[spade.sandbox]``'s
    defaults); every sandbox actor applies the same limits and backend as the local pool
    would. ``step_timeout_s`` is the deadline of one step.
    """
    from spade_sandbox.launcher import SandboxLauncher

    rollout = rollout or RolloutExecutorSettings()
    launcher = launcher or SandboxLauncher()
    if rollout.executor == "ray":
        from .executor import RayEnvPool

        settings = launcher.settings
        limits = launcher.limits(call_timeout_s=step_timeout_s)
        return RayEnvPool(rollout.ray, limits=limits, backend=settings.backend, allow_insecure=settings.allow_insecure)
    return launcher.pool(call_timeout_s=step_timeout_s)


def env_backend_for(config: SelfPlayConfig, launcher: SandboxLauncher | None = None) -> Any:
    """The environment pool of a self-play run: ``config.rollout`` picks the executor,
    ``launcher`` (the run's sandbox settings: ``[spade.sandbox]`` with ``[selfplay.sandbox]``
    applied) the limits and backend, ``config.sandbox.step_timeout_s`` the step deadline
    (what ``SelfPlayRun`` builds when given no backend)."""
    return build_env_backend(getattr(config, "rollout", None), launcher, step_timeout_s=config.sandbox.step_timeout_s)


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
