"""How served environments are opened: :class:`SandboxEnvFactory`, what a server's
:class:`~spade_serve.sessions.SessionManager` and the TRL adapter are handed, as OpenEnv's
server is handed its environment factory (``HTTPEnvServer(env=factory)``): neither decides
how an instance is built or where it runs.

Every instance is opened by :func:`spade_sandbox.opener.open_env`, the one way an
environment is opened. Store code runs in a sandbox pool (the static allow-list, the
runtime guard, every OS layer); so does a seed, unless the factory trusts seeds (``spade
serve --seeds-in-process``, ``TrlEnvironments(seeds_in_process=True)``): a seed is then
trusted plugin code, run in a worker of a trusted pool (its plugin's modules importable,
none of the confinement) under the same call deadline, so a hung seed is stopped as store
code is. The pools are the factory's own, made by its launcher on first use with the
consumer's deadline and idle workers, and closed by :meth:`SandboxEnvFactory.close`; a
sandbox pool its caller passes is used instead and left open.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spade_core.env import TextEnv
    from spade_sandbox.launcher import SandboxLauncher
    from spade_sandbox.pool import SandboxPool

    from .catalog import ServedEnv
    from .settings import ServeSettings


class SandboxEnvFactory:
    """Opens :class:`~spade_serve.catalog.ServedEnv` instances in pools of ``launcher``
    (default: ``[spade.sandbox]``'s defaults); see the module docstring. ``pool``: a sandbox
    pool the caller owns, for store code (and untrusted seeds). ``keep_spare``,
    ``call_timeout_s`` (``None``: the settings' deadline) and ``max_idle_workers`` are the
    consumer's own limits of the pools made here. Thread-safe: instances are opened on the
    server's call threads."""

    def __init__(
        self,
        launcher: SandboxLauncher | None = None,
        *,
        trust_seeds: bool = False,
        pool: SandboxPool | None = None,
        keep_spare: bool = True,
        call_timeout_s: float | None = None,
        max_idle_workers: int | None = None,
    ) -> None:
        if launcher is None:
            from spade_sandbox.launcher import SandboxLauncher

            launcher = SandboxLauncher()
        self.launcher = launcher
        self.trust_seeds = trust_seeds
        self._pool = pool
        self._own_pool = pool is None
        self._trusted_pool: SandboxPool | None = None
        self._keep_spare = keep_spare
        self._limits = {"call_timeout_s": call_timeout_s, "max_idle_workers": max_idle_workers}
        self._lock = threading.Lock()

    @classmethod
    def for_server(
        cls, settings: ServeSettings, launcher: SandboxLauncher | None = None, *, pool: SandboxPool | None = None
    ) -> SandboxEnvFactory:
        """The factory of a server of ``settings``: its call deadline, idle workers and
        trust of seeds. With shared workers a new one is needed once per group, so the
        zygote's spare (a whole worker forked ahead to make the next spawn quicker) is not
        kept."""
        return cls(launcher, trust_seeds=settings.seeds_in_process, pool=pool,
                   keep_spare=settings.sessions_per_worker == 1, call_timeout_s=settings.call_timeout_s,
                   max_idle_workers=settings.max_idle_workers)

    def trusts(self, env: ServedEnv) -> bool:
        """Whether ``env`` opens as trusted code (a seed, when this factory trusts seeds)."""
        return env.kind == "seed" and self.trust_seeds

    def open(self, env: ServedEnv, *, isolation: str = "") -> TextEnv:
        """A new instance of ``env``; instances of different ``isolation`` keys never share a
        worker process. Raises what opening raises (:class:`~spade_sandbox.errors.SandboxError`,
        :class:`~spade_core.errors.SpadeError`)."""
        from spade_sandbox.opener import open_env

        meta = env.metadata
        trusted = self.trusts(env)
        return open_env(env.source, max_turns=meta.max_turns, allowed_modules=env.allowed_modules,
                        reward_range=meta.reward_range, class_name=meta.class_name, trusted=trusted,
                        pool=self.trusted_pool if trusted else self.pool, isolation=isolation)

    @property
    def pool(self) -> SandboxPool:
        """The sandbox pool of untrusted code, made on first use."""
        with self._lock:
            if self._pool is None:
                self._pool = self.launcher.pool(keep_spare=self._keep_spare, **self._limits)
            return self._pool

    @property
    def trusted_pool(self) -> SandboxPool:
        """The pool of trusted seeds, made on first use."""
        with self._lock:
            if self._trusted_pool is None:
                self._trusted_pool = self.launcher.trusted_pool(**self._limits)
            return self._trusted_pool

    def workers(self) -> int:
        """Worker processes of this factory's pools now."""
        with self._lock:
            pools = [p for p in (self._pool, self._trusted_pool) if p is not None and not p.closed]
        return sum(len(p.workers()) for p in pools)

    def close(self) -> None:
        """Close the pools made here (every worker and their zygotes); a pool the caller
        passed stays open. Idempotent."""
        with self._lock:
            owned = [self._trusted_pool, self._pool if self._own_pool else None]
        for pool in owned:
            if pool is not None:
                pool.close()


__all__ = ["SandboxEnvFactory"]
