"""The process-wide sandbox pool: one per process, created on first use, closed at exit.

What a fresh interpreter's ``gymnasium.make`` of a stored environment runs its code in
(:class:`~spade_sandbox.env.SandboxedEnv` without a pool). The library never reads a
configuration file for it: :func:`default_pool` takes the ``[spade.sandbox]`` settings
its caller loaded, and the one fallback to the active configuration is
:func:`active_sandbox_settings`, which only the edge calls (``SandboxedEnv`` without a
pool: the ``gymnasium.make`` entry, whose caller passes no configuration).

A child made by ``os.fork`` neither uses nor closes the default pool of its parent.
"""

from __future__ import annotations

import atexit
import os
import threading
from typing import TYPE_CHECKING

from .limits import SandboxLimits
from .pool import SandboxPool
from .prestart import configures_default_sandbox, watch_default_pool

if TYPE_CHECKING:
    from spade_core.config import SandboxSettings

_default: SandboxPool | None = None
_default_lock = threading.Lock()
watch_default_pool(lambda: _default is not None)  # prestart starts no zygote once it exists
_close_at_exit_registered = False


def pool_from_settings(settings: SandboxSettings | None) -> SandboxPool:
    """A pool with the limits, backend and ``allow_insecure`` of ``settings`` (a
    ``[spade.sandbox]`` table, :class:`spade_core.config.SandboxSettings`); ``None``: the
    defaults of that table, which are :class:`SandboxLimits`' and the native backend."""
    if settings is None:
        return SandboxPool(SandboxLimits())
    limits = SandboxLimits(
        call_timeout_s=settings.call_timeout_s,
        memory_mb=settings.memory_mb,
        cpu_seconds=settings.cpu_seconds,
        worker_cpu_seconds=settings.worker_cpu_seconds,
    )
    return SandboxPool(limits, backend=settings.backend, allow_insecure=settings.allow_insecure)


def current_default_pool() -> SandboxPool | None:
    """The process-wide pool if it exists and is open (creates nothing)."""
    pool = _default
    return pool if pool is not None and not pool.closed else None


def default_pool(settings: SandboxSettings | None = None) -> SandboxPool:
    """The process-wide pool, created on first use (and again after it was closed) from
    ``settings`` (``None``: the defaults of ``[spade.sandbox]``); once it exists, later calls
    return it whatever they pass. Closed at interpreter exit."""
    global _default, _close_at_exit_registered
    with _default_lock:
        if _default is None or _default.closed:
            _default = pool_from_settings(settings)
            if not _close_at_exit_registered:
                atexit.register(_close_default_at_exit)
                _close_at_exit_registered = True
        return _default


def active_sandbox_settings() -> SandboxSettings | None:
    """The edge's fallback: the ``[spade.sandbox]`` table of the active configuration (the
    same lookup as ``load_config``), ``None`` when it leaves the table at its defaults. That
    case, a fresh interpreter's first ``gymnasium.make`` of a stored environment, is
    answered by the core's light reader (``spade_core.run_settings``) without loading the
    pydantic configuration model."""
    if configures_default_sandbox():
        return None
    from spade_core.config import load_config

    return load_config().sandbox


def _close_default_at_exit() -> None:
    pool = _default
    if pool is not None:
        pool.close(wait=False)


def _forget_default_in_child() -> None:
    """After ``os.fork``, in the child: the default pool's workers and zygote are the
    parent's. The child closes its copies of their descriptors without a word to them (its
    exit must not close the parent's pool) and makes a pool of its own when it needs one."""
    global _default, _default_lock
    _default_lock = threading.Lock()  # another thread may have held it at the fork
    pool, _default = _default, None
    if pool is not None:
        pool.forget()


os.register_at_fork(after_in_child=_forget_default_in_child)
