"""Starting the default pool's zygote at the first make, before the pool is imported.

A fresh interpreter's first ``gymnasium.make`` of a stored environment waits for the
zygote's boot (~0.1 s, mostly pre-importing the allowed modules). :func:`prepare`, the
``prepare`` of the sandbox's runner (:data:`spade_sandbox.plugin.RUNNER`), is called by
:func:`spade_core.stored_envs.make_stored_env` before it reads the store: the boot then
overlaps reading the store and importing the pool instead of following them. Nothing is
started before that first make: importing a package starts no process. The core calls
:func:`prepare` through the runner: it never imports this package itself.

The default pool's backend adopts the started zygote (:func:`take`) when it would run the
same command; otherwise it is told to leave. A child made by ``os.fork`` forgets a zygote
its parent started (the parent's, not the child's to use). This module imports only
:mod:`spade_sandbox.zygote_process` (and that only when it starts a zygote).
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .zygote_process import ZygoteProcess

_lock = threading.Lock()
_started: ZygoteProcess | None = None
#: How the started zygote was asked to run: (outer jail prefix, spare, cgroups).
_DEFAULT_OPTIONS: tuple[tuple[str, ...], bool, bool] = ((), True, True)


def _no_pool() -> bool:
    return False


#: Whether the process-wide pool exists (its backend then has or starts its own zygote):
#: told by :mod:`spade_sandbox.default` through :func:`watch_default_pool` when it is
#: imported, so that this module neither imports the pool nor reads its privates.
_default_pool_exists: Callable[[], bool] = _no_pool


def watch_default_pool(exists: Callable[[], bool]) -> None:
    """Called once by :mod:`spade_sandbox.default`: ``exists()`` answers whether the default
    pool has been created; :func:`prepare` starts nothing once it has."""
    global _default_pool_exists
    _default_pool_exists = exists


def configures_default_sandbox() -> bool:
    """True when the active configuration (same lookup as ``load_config``) leaves
    ``[spade.sandbox]`` at its defaults, so that a default pool needs no configuration model:
    :attr:`spade_core.run_settings.RunSettings.sandbox_defaults`, the core's light reader
    (it validates through ``load_config`` whatever it cannot vouch for, and raises its
    ``ConfigError`` for an invalid file)."""
    from spade_core.run_settings import run_settings

    return run_settings().sandbox_defaults


def prepare() -> None:
    """The sandbox runner's ``prepare`` (see :class:`spade_core.runners.EnvRunner`), called at
    the start of a make from the store: start the zygote of the process-wide pool, without
    waiting for it, when that pool does not exist yet and would run with the default
    settings. Does nothing otherwise (the pool then starts its zygote itself, as it always
    can)."""
    global _started
    if _default_pool_exists():
        return
    with _lock:
        if _started is not None:
            return
        from spade_core.errors import ConfigError

        try:
            if not configures_default_sandbox():
                return
        except ConfigError:  # reported by the pool's own lookup, as before
            return
        from .zygote_process import ZygoteProcess

        prefix, spare, cgroups = _DEFAULT_OPTIONS
        _started = ZygoteProcess(prefix, spare=spare, cgroups=cgroups)
        atexit.register(_leave)


def take(command_prefix: Sequence[str], spare: bool, cgroups: bool) -> ZygoteProcess | None:
    """The started zygote, if it runs what a backend with these options would start (and
    is still alive); otherwise ``None``, after telling a started one to leave."""
    global _started
    with _lock:
        started, _started = _started, None
    if started is None:
        return None
    if (tuple(command_prefix), spare, cgroups) == _DEFAULT_OPTIONS and started.alive:
        return started
    started.close(wait=False)
    return None


def _leave() -> None:
    """At exit: a zygote started here that no pool adopted (its make failed before the pool
    was made) is told to leave."""
    global _started
    with _lock:
        started, _started = _started, None
    if started is not None:
        started.close(wait=False)


def _forget_in_child() -> None:
    """After ``os.fork``, in the child: the started zygote is the parent's. The child closes
    its copy of the control socket (so the zygote still sees the parent's exit) and starts
    its own zygote when it needs one."""
    global _lock, _started
    _lock = threading.Lock()  # another thread may have held it at the fork
    started, _started = _started, None
    if started is not None:
        started.sock.close()


os.register_at_fork(after_in_child=_forget_in_child)
