"""TEST DOUBLE: an in-process stand-in for ``spade_sandbox.SandboxPool``.

It implements the small runner interface the pipeline uses over
``spade_core.source.load_trusted_class``, raising the sandbox's own error types, so stage
logic can be unit-tested without worker processes. It cannot stop an infinite loop and
isolates nothing: only trusted test sources go through it. The production path and the
corpus evaluation use the real sandbox.
"""

from __future__ import annotations

import itertools
import traceback
from typing import Any

from spade_core.source import load_trusted_class


class InProcessRunner:
    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._envs: dict[int, Any] = {}
        self.spawned = 0

    def _raise(self, exc: BaseException) -> None:
        from spade_sandbox.errors import EnvCodeError

        raise EnvCodeError(f"{type(exc).__name__}: {exc}", env_traceback=traceback.format_exc()) from exc

    def spawn(self, source: str, allowed_modules: Any = (), class_name: str | None = None) -> int:
        try:
            cls = load_trusted_class(source, class_name)
            env = cls()
        except Exception as exc:
            self._raise(exc)
        handle = next(self._ids)
        self._envs[handle] = env
        self.spawned += 1
        return handle

    def reset(self, handle: int, seed: int | None = None) -> Any:
        try:
            return self._envs[handle].reset(seed=seed)
        except Exception as exc:
            self._raise(exc)

    def step(self, handle: int, action: str) -> Any:
        try:
            return self._envs[handle].step(action)
        except Exception as exc:
            self._raise(exc)

    def call(self, handle: int, method: str) -> Any:
        fn = getattr(self._envs[handle], method, None)
        if fn is None:
            from spade_sandbox.errors import EnvMethodMissing

            raise EnvMethodMissing(f"environment has no {method}()")
        try:
            return fn()
        except Exception as exc:
            self._raise(exc)

    def close_env(self, handle: int) -> None:
        self._envs.pop(handle, None)

    def close(self) -> None:
        self._envs.clear()
