"""An in-process environment pool for **trusted** code (seed environments of installed
plugins, tests, benchmarks). It offers the ``EnvBackend`` calls of ``SandboxPool`` with the
same per-item error convention, but no isolation: never give it generated code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spade_core.env import check_reset_result, check_step_result
from spade_core.source import instantiate, load_trusted_class


class TrustedEnvPool:
    """Runs trusted environment classes in this process; errors are returned per item."""

    def __init__(self) -> None:
        self._classes: dict[tuple[str, str | None], type] = {}
        self._envs: dict[int, Any] = {}
        self._next = 0

    def spawn(self, source: str, *, allowed_modules: Any = (), class_name: str | None = None) -> int:
        key = (source, class_name)
        if key not in self._classes:
            self._classes[key] = load_trusted_class(source, class_name)
        self._next += 1
        self._envs[self._next] = instantiate(self._classes[key])
        return self._next

    def reset_many(self, items: Sequence[tuple[int, int | None]]) -> list[Any]:
        out: list[Any] = []
        for h, seed in items:
            try:
                out.append(check_reset_result(self._envs[h].reset(seed=seed)))
            except Exception as exc:  # per-item errors, like the sandbox
                out.append(exc)
        return out

    def step_many(self, items: Sequence[tuple[int, str]]) -> list[Any]:
        out: list[Any] = []
        for h, action in items:
            try:
                out.append(check_step_result(self._envs[h].step(action)))
            except Exception as exc:
                out.append(exc)
        return out

    def call(self, handle: int, method: str) -> Any:
        return getattr(self._envs[handle], method)()

    def close_env(self, handle: int) -> None:
        env = self._envs.pop(handle, None)
        close = getattr(env, "close", None)
        if close is not None:
            close()

    def close(self) -> None:
        for h in list(self._envs):
            self.close_env(h)
