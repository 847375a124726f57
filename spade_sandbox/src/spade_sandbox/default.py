"""The process-wide sandbox pools: created on first use, closed at exit, all closed by
:func:`close_process_pools`.

What a fresh interpreter's ``gymnasium.make`` of a stored environment runs its code in
(:class:`~spade_sandbox.env.SandboxedEnv` without a pool). The library never reads a
configuration file for it: :func:`default_pool` takes the ``[spade.sandbox]`` settings
its caller loaded, and the one fallback to the active configuration is
:func:`active_sandbox_settings`, which only the edge calls (``SandboxedEnv`` given neither
a pool nor settings: the ``gymnasium.make`` entry, whose caller passes no configuration).
A caller that loaded other settings (``spade --config FILE play``) gets the process-wide
pool of those settings from :func:`pool_for`.

:func:`trusted_pool` keeps the trusted pools (``open_env``'s for seeds and plugin code), one
per ``[spade.sandbox]`` settings and module path.

A child made by ``os.fork`` neither uses nor closes the process-wide pools of its parent.
"""

from __future__ import annotations

import atexit
import os
import threading
from typing import TYPE_CHECKING

from .launcher import SandboxLauncher
from .pool import SandboxPool
from .prestart import watch_default_pool
from .zygote_process import zygote_path

if TYPE_CHECKING:
    from spade_core.sandbox_settings import SandboxSettings

_default: SandboxPool | None = None
_default_settings: SandboxSettings | None = None
#: Pools of settings other than the default pool's, made by :func:`pool_for`.
_others: dict[SandboxSettings, SandboxPool] = {}
#: The trusted pools of :func:`trusted_pool`, by settings and module path.
_trusted: dict[tuple[SandboxSettings, tuple[str, ...]], SandboxPool] = {}
_default_lock = threading.Lock()
watch_default_pool(lambda: _default is not None)  # prestart starts no zygote once it exists
_close_at_exit_registered = False


def current_default_pool() -> SandboxPool | None:
    """The process-wide pool if it exists and is open (creates nothing)."""
    pool = _default
    return pool if pool is not None and not pool.closed else None


def default_pool(settings: SandboxSettings | None = None) -> SandboxPool:
    """The process-wide pool, created on first use (and again after it was closed) from
    ``settings`` (``None``: the defaults of ``[spade.sandbox]``); once it exists, later calls
    return it whatever they pass. Closed at interpreter exit."""
    global _default, _default_settings, _close_at_exit_registered
    with _default_lock:
        if _default is None or _default.closed:
            launcher = SandboxLauncher(settings)
            _default, _default_settings = launcher.pool(), launcher.settings
            if not _close_at_exit_registered:
                atexit.register(_close_default_at_exit)
                _close_at_exit_registered = True
        return _default


def pool_for(settings: SandboxSettings) -> SandboxPool:
    """The process-wide pool of ``settings``: the default pool when it has them (or does
    not exist yet: it is then made with them), else one made for them on first use. Every
    one is closed at interpreter exit."""
    default = default_pool(settings)
    if _default_settings == settings:
        return default
    with _default_lock:
        pool = _others.get(settings)
        if pool is None or pool.closed:
            pool = _others[settings] = SandboxLauncher(settings).pool()
        return pool


def trusted_pool(settings: SandboxSettings) -> SandboxPool:
    """The process-wide trusted pool of ``settings`` and of this process's module path
    (:func:`~spade_sandbox.zygote_process.zygote_path`, what its workers import from), made
    on first use (and again after it was closed)."""
    global _close_at_exit_registered
    key = (settings, tuple(zygote_path()))
    with _default_lock:
        pool = _trusted.get(key)
        if pool is None or pool.closed:
            pool = _trusted[key] = SandboxLauncher(settings).trusted_pool()
            if not _close_at_exit_registered:
                atexit.register(_close_default_at_exit)
                _close_at_exit_registered = True
        return pool


def active_sandbox_settings() -> SandboxSettings:
    """The edge's fallback: the ``[spade.sandbox]`` table of the active configuration (the
    same lookup as ``load_config``), read by the core's light reader
    (``spade_core.run_settings``), which loads the pydantic model only when the file needs it."""
    from spade_core.run_settings import run_settings

    return run_settings().sandbox


def close_process_pools(wait: bool = True) -> None:
    """Close the default pool and every pool :func:`pool_for` and :func:`trusted_pool` made
    (at interpreter exit, without waiting; a later use makes them again)."""
    for pool in [_default, *_others.values(), *_trusted.values()]:
        if pool is not None:
            pool.close(wait=wait)


def _close_default_at_exit() -> None:
    close_process_pools(wait=False)


def _forget_default_in_child() -> None:
    """After ``os.fork``, in the child: the default pool's workers and zygote are the
    parent's. The child closes its copies of their descriptors without a word to them (its
    exit must not close the parent's pool) and makes a pool of its own when it needs one."""
    global _default, _default_lock, _others, _trusted
    _default_lock = threading.Lock()  # another thread may have held it at the fork
    pools = [_default, *_others.values(), *_trusted.values()]
    _default, _others, _trusted = None, {}, {}
    for pool in pools:
        if pool is not None:
            pool.forget()


os.register_at_fork(after_in_child=_forget_default_in_child)
