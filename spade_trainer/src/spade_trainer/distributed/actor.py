"""The sandbox side of the Ray executor: one :class:`SandboxActor` per CPU slot.

Each actor owns a :class:`spade_sandbox.SandboxPool` on its node and answers in plain
values only (see :mod:`.wire`). Instances are named by small integers local to the actor;
the pool's :class:`~spade_sandbox.EnvHandle` objects never leave it. Environment source is
sent once per actor and code hash, later spawns name the hash only.

The class is plain Python: :mod:`.executor` wraps it with ``ray.remote`` at runtime, so
importing this module never imports ray (and unit tests can drive it directly).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from typing import Any

from spade_sandbox.errors import SandboxError, SandboxRequestError

from .wire import OK, encode_error, encode_reset, encode_step

#: Reply of :meth:`SandboxActor.spawn` when it was named a code hash it has not seen.
UNKNOWN_CODE = "unknown_code"


class SandboxActor:
    """Runs environments in a local sandbox pool on behalf of a driver.

    ``limits`` is ``SandboxLimits.model_dump()`` (plain data), ``backend`` a registered
    sandbox backend name: the driver's launcher's, rebuilt here by a launcher.
    """

    def __init__(self, limits: dict[str, Any], backend: str = "native", allow_insecure: bool = False) -> None:
        from spade_core.sandbox_settings import SandboxSettings
        from spade_sandbox.launcher import SandboxLauncher

        launcher = SandboxLauncher(SandboxSettings(backend=backend, allow_insecure=allow_insecure))
        self._pool = launcher.pool(**limits)
        self._sources: dict[str, str] = {}
        self._handles: dict[int, Any] = {}
        self._next = 0

    def where(self) -> dict[str, Any]:
        """Host name and process id of this actor (for status and tests)."""
        return {"host": socket.gethostname(), "pid": os.getpid(), "instances": len(self._handles),
                "workers": len(self._pool.workers())}

    def spawn(
        self, code_hash: str, source: str | None, allowed_modules: Sequence[str], class_name: str | None
    ) -> list[Any]:
        """``["ok", instance id]``, ``["unknown_code"]`` (send the source), or an error reply."""
        if source is not None:
            self._sources[code_hash] = source
        text = self._sources.get(code_hash)
        if text is None:
            return [UNKNOWN_CODE]
        try:
            handle = self._pool.spawn(text, allowed_modules=tuple(allowed_modules), class_name=class_name)
        except SandboxError as exc:
            return encode_error(exc)
        self._next += 1
        self._handles[self._next] = handle
        return [OK, self._next]

    def reset_many(self, items: Sequence[tuple[int, int | None]]) -> list[list[Any]]:
        """One reply per item, in order (see :func:`.wire.encode_reset`)."""
        return self._batch(self._pool.reset_many, items, encode_reset)

    def step_many(self, items: Sequence[tuple[int, str]]) -> list[list[Any]]:
        """One reply per item, in order (see :func:`.wire.encode_step`)."""
        return self._batch(self._pool.step_many, items, encode_step)

    def call(self, instance: int, method: str) -> list[Any]:
        try:
            return [OK, self._pool.call(self._handle(instance), method)]
        except SandboxError as exc:
            return encode_error(exc)

    def close_env(self, instance: int) -> None:
        """Close the instance; an unknown or lost one closes silently (as in the pool)."""
        handle = self._handles.pop(instance, None)
        if handle is not None:
            try:
                self._pool.close_env(handle)
            except SandboxError:
                pass  # the environment's close() failed: the instance is gone all the same

    def shutdown(self) -> None:
        """Kill every sandbox worker of this actor (the actor process itself stays until killed)."""
        self._handles.clear()
        self._pool.close()

    def _handle(self, instance: int) -> Any:
        handle = self._handles.get(instance)
        if handle is None:
            raise SandboxRequestError(f"no open environment instance {instance} on this Ray sandbox actor")
        return handle

    def _batch(self, run: Any, items: Sequence[tuple[int, Any]], encode: Any) -> list[list[Any]]:
        replies: list[list[Any] | None] = [None] * len(items)
        known: list[int] = []
        for i, (instance, _) in enumerate(items):
            if instance in self._handles:
                known.append(i)
            else:
                replies[i] = encode_error(SandboxRequestError(f"no open environment instance {instance} on this actor"))
        if known:
            results = run([(self._handles[items[i][0]], items[i][1]) for i in known])
            for i, res in zip(known, results, strict=True):
                replies[i] = encode(res)
        return [r for r in replies if r is not None]
