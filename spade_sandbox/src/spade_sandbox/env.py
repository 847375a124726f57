"""``SandboxedEnv``: a Gymnasium environment whose code runs in a sandbox worker."""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from spade_core.env import ReferenceEnvAdapter

from .default import active_sandbox_settings, current_default_pool, default_pool, pool_for
from .pool import EnvHandle, SandboxPool
from .replies import ResetResult, StepResult

if TYPE_CHECKING:
    from spade_core.sandbox_settings import SandboxSettings


class RemoteEnv:
    """Reference-format proxy: each method is an RPC to the instance in its worker."""

    def __init__(self, pool: SandboxPool, handle: EnvHandle) -> None:
        self.pool = pool
        self.handle = handle
        self._closed = False

    def reset(self, seed: int | None = None) -> ResetResult:
        return self.pool.reset(self.handle, seed)

    def step(self, action: str) -> StepResult:
        return self.pool.step(self.handle, action)

    def solution(self) -> Any:
        return self.pool.call(self.handle, "solution")

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return list(self.pool.call(self.handle, "get_tool_schemas"))

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.pool.close_env(self.handle)


class SandboxedEnv(ReferenceEnvAdapter):
    """A ``gymnasium.Env`` (``spade_core.env.TextEnv``) running ``source`` in a sandbox.

    The instance lives in a worker of ``pool``; without one, in the process-wide pool of
    ``sandbox`` (the ``[spade.sandbox]`` settings the caller loaded,
    :func:`~spade_sandbox.default.pool_for`), and given neither, in the process-wide pool
    :func:`~spade_sandbox.default.default_pool`, created on first need from the active
    configuration's ``[spade.sandbox]``: this is the ``gymnasium.make`` entry, the edge
    where that fallback belongs. Values are
    validated by :class:`~spade_core.env.ReferenceEnvAdapter` exactly as for a local
    environment. Errors are :class:`~spade_sandbox.errors.SandboxError` subclasses (or the
    adapter's ``EnvContractError``). ``close()`` frees the instance; an environment that is
    garbage-collected unclosed is freed at the pool's next spawn.
    """

    def __init__(
        self,
        source: str,
        *,
        pool: SandboxPool | None = None,
        max_turns: int | None = None,
        allowed_modules: Iterable[str] = (),
        reward_range: tuple[float, float] = (0.0, 1.0),
        class_name: str | None = None,
        render_mode: str | None = None,
        sandbox: SandboxSettings | None = None,
        isolation: str = "",
    ) -> None:
        if pool is None and sandbox is not None:
            pool = pool_for(sandbox)
        elif pool is None:
            pool = current_default_pool() or default_pool(active_sandbox_settings())
        self.pool = pool
        handle = self.pool.spawn(source, allowed_modules=allowed_modules, class_name=class_name, isolation=isolation)
        self.handle = handle
        super().__init__(RemoteEnv(self.pool, handle), max_turns=max_turns, reward_range=reward_range, render_mode=render_mode)
        self._finalizer = weakref.finalize(self, self.pool.close_env_later, handle)

    def close(self) -> None:
        self._finalizer.detach()
        super().close()
