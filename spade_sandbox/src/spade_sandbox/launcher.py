"""The one place pools are made: :class:`SandboxLauncher`, built at the edge from the
``[spade.sandbox]`` settings the caller loaded and handed to every part that runs
environment code (``gymnasium.make``, ``spade play``, ``spade serve``, the TRL adapter,
validation, rollouts, evaluation).

A consumer may tighten what is its own business (a call deadline, how many idle workers it
keeps warm, whether the zygote forks a spare ahead); the backend, ``allow_insecure`` and the
memory and CPU limits are the settings', whoever builds the pool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spade_core.sandbox_settings import SandboxSettings

from .limits import SandboxLimits
from .pool import SandboxPool

#: Backends whose zygote may keep a spare worker forked ahead (``ZygoteBackend``'s option).
_ZYGOTE_BACKENDS = frozenset({"native", "nsjail", "bwrap"})


class SandboxLauncher:
    """Makes :class:`~spade_sandbox.pool.SandboxPool` s under one :class:`SandboxSettings`."""

    def __init__(self, settings: SandboxSettings | None = None) -> None:
        self.settings = settings if settings is not None else SandboxSettings()

    @classmethod
    def from_config(cls, config: Any) -> SandboxLauncher:
        """From a loaded configuration (``SpadeConfig`` or ``RunSettings``: its ``sandbox``)."""
        return cls(config.sandbox)

    @classmethod
    def active(cls) -> SandboxLauncher:
        """The edge's fallback when its caller passed no configuration: the active file's
        ``[spade.sandbox]`` (the core's light reader; pydantic only when the file needs it)."""
        from spade_core.run_settings import run_settings

        return cls(run_settings().sandbox)

    def overridden(self, **changes: Any) -> SandboxLauncher:
        """A launcher whose settings are these with ``changes`` (``None``: kept)."""
        return SandboxLauncher(self.settings.override(**changes))

    def limits(self, **overrides: Any) -> SandboxLimits:
        """The settings' limits plus a consumer's own (``call_timeout_s``, ``max_idle_workers``...)."""
        s = self.settings
        fields: dict[str, Any] = {
            "call_timeout_s": s.call_timeout_s,
            "memory_mb": s.memory_mb,
            "cpu_seconds": s.cpu_seconds,
            "worker_cpu_seconds": s.worker_cpu_seconds,
        }
        fields.update({k: v for k, v in overrides.items() if v is not None})
        return SandboxLimits(**fields)

    def pool(self, *, keep_spare: bool = True, **limit_overrides: Any) -> SandboxPool:
        """A new pool on the settings' backend; ``keep_spare=False`` asks a zygote backend not
        to fork a worker ahead (others have no spare)."""
        options: Mapping[str, Any] = {} if keep_spare or self.settings.backend not in _ZYGOTE_BACKENDS else {"spare": False}
        from .backends import resolve_backend

        backend = resolve_backend(self.settings.backend, **options)
        return SandboxPool(self.limits(**limit_overrides), backend=backend, allow_insecure=self.settings.allow_insecure)

    def trusted_pool(self, **limit_overrides: Any) -> SandboxPool:
        """A pool for trusted code (a plugin's seed environments): each code version in a
        worker process of its own, killed at the settings' call deadline (the same
        ``call_timeout`` error store code gets) and held to their memory and CPU limits, but
        without the static allow-list, the runtime guard or the confining layers
        (namespaces, Landlock, seccomp, another uid), so the code imports what it imports
        in-process (its plugin's own modules): a deadline, not a security boundary. Always
        the native zygote, whatever the settings' backend: a plain child process runs
        wherever the sandbox does, even where its layers do not."""
        from .backends import ZygoteBackend

        limits = self.limits(namespaces=False, drop_uid=False, landlock=False, seccomp=False, **limit_overrides)
        # Its own zygote, started on first use: it finds the modules of this process's
        # module path then (the default pool's, started ahead by the first make, knows the path
        # of that moment).
        return SandboxPool(limits, backend=ZygoteBackend("trusted", spare=False, adopt=False), allow_insecure=True,
                           unsafe_skip_static_check=True)

    def program_pool(self, **limit_overrides: Any) -> SandboxPool:
        """A pool for whole programs instead of environment classes (contest solutions that
        import ``sys`` and read standard input): no static check and no Python guard in its
        workers, the OS layers alone (seccomp, Landlock, namespaces, rlimits, the memory
        cgroup). So it never runs without them: ``allow_insecure`` is off whatever the
        settings say. Backend and limits as :meth:`pool`'s."""
        from .backends import resolve_backend

        return SandboxPool(self.limits(**limit_overrides), backend=resolve_backend(self.settings.backend),
                           allow_insecure=False, unsafe_skip_static_check=True)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SandboxLauncher) and other.settings == self.settings

    def __hash__(self) -> int:
        return hash(self.settings)

    def __repr__(self) -> str:
        return f"SandboxLauncher({self.settings!r})"
