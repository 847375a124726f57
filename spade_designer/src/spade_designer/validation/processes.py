"""Validator processes: the sandbox stages of a batch, spread over CPU cores.

A validation spends most of the caller's CPU in Hypothesis, the invariant checks and the
IPC to the sandbox; in threads of one process that work is serialised by the GIL, so a
thread pool does not scale. :class:`ValidatorProcesses` runs a validator (what the caller's
``make_validator`` builds, :class:`~.pipeline.Validator` for the pipeline, which passes its
own class: this module never imports the pipeline) in each of ``processes`` child
processes, each with its own sandbox pool (built from a :class:`PoolRecipe`: the caller's limits and insecure-mode
setting, the default backend), and hands them the stages between ``static`` and ``novelty``: the static
stage (cheap, executes nothing) and the novelty stage (it needs the one index of known
environments and the batch's earlier candidates) stay in the calling process.

Children are started with ``spawn`` (the caller may hold threads and sandbox pipes that
must not be forked), once, on the first batch; :meth:`close` stops them and their pools.
"""

from __future__ import annotations

import atexit
import multiprocessing
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, cast

from spade_core.metadata import EnvMetadata, ValidationReport

from .codes import Stage
from .config import ValidationConfig
from .runner import EnvRunner

#: Stages that stay in the calling process (see the module docstring).
CALLER_STAGES = frozenset({Stage.static, Stage.novelty})


@dataclass(frozen=True)
class PoolRecipe:
    """How a child builds a sandbox pool equivalent to the caller's: the caller's limits,
    ``allow_insecure`` and backend (by its registered name), through the launcher."""

    limits: Any
    allow_insecure: bool = False
    backend: str = "native"

    def build(self) -> Any:
        from spade_core.sandbox_settings import SandboxSettings
        from spade_sandbox.launcher import SandboxLauncher

        launcher = SandboxLauncher(SandboxSettings(backend=self.backend, allow_insecure=self.allow_insecure))
        return launcher.pool(**self.limits.model_dump())


def pool_recipe(pool: EnvRunner | None) -> PoolRecipe | None:
    """The recipe of an injected pool, or ``None`` when a child could not rebuild it
    exactly (another runner, another backend or backend options, the unsafe test mode)."""
    from spade_sandbox.backends import ZygoteBackend
    from spade_sandbox.pool import SandboxPool

    if type(pool) is not SandboxPool:
        return None
    sandbox = cast(SandboxPool, pool)  # exactly a SandboxPool, as tested above
    if sandbox.skip_static:
        return None
    backend = sandbox.backend
    default = ZygoteBackend()
    if type(backend) is not ZygoteBackend or (backend.name, backend.command_prefix, backend.spare, backend.cgroups) != (
        default.name, default.command_prefix, default.spare, default.cgroups
    ):
        return None
    return PoolRecipe(sandbox.limits, sandbox.allow_insecure)


@dataclass(frozen=True)
class SandboxJob:
    """One candidate for a child: plain, picklable values only (a domain by its name)."""

    source: str
    metadata: EnvMetadata | None
    domain: str | None
    hint: str | None


def sandbox_stages(config: ValidationConfig) -> ValidationConfig:
    """``config`` restricted to the stages a child runs."""
    return config.model_copy(update={"stages": tuple(s for s in config.stages if s not in CALLER_STAGES)})


class ChildValidator(Protocol):
    """What a child runs its jobs on (``Validator.validate``'s signature)."""

    def validate(
        self, source: str, *, metadata: EnvMetadata | None, domain: str | None, hint: str | None
    ) -> ValidationReport: ...


#: Builds a child's validator from its sandbox pool and configuration. It travels to the
#: children pickled, so it must be importable by name (a module-level class or function).
MakeValidator = Callable[[EnvRunner, ValidationConfig], ChildValidator]


# --- the child's side --------------------------------------------------------------------

_validator: ChildValidator | None = None


def _start_child(config_json: str, recipe: PoolRecipe, make_validator: MakeValidator) -> None:
    global _validator
    pool = recipe.build()
    atexit.register(pool.close)  # the child's sandbox pool goes with it
    _validator = make_validator(pool, ValidationConfig.model_validate_json(config_json))


def _run_job(job: SandboxJob) -> ValidationReport:
    assert _validator is not None, "the child's initializer did not run"
    return _validator.validate(job.source, metadata=job.metadata, domain=job.domain, hint=job.hint)


def _ping() -> bool:
    return _validator is not None


# --- the caller's side -------------------------------------------------------------------


class ValidatorProcesses:
    """``processes`` child validators sharing one configuration, each built by
    ``make_validator(pool, config)`` in its child.

    :meth:`submit` returns a future of the child's report for the sandbox stages of
    ``config`` (the caller's stages left out). Not thread-safe to close while submitting.
    """

    def __init__(
        self, config: ValidationConfig, processes: int, recipe: PoolRecipe, make_validator: MakeValidator
    ) -> None:
        if processes < 1:
            raise ValueError(f"processes must be at least 1, got {processes}")
        self.config = sandbox_stages(config)
        self.processes = processes
        self.recipe = recipe
        self.make_validator = make_validator
        self._executor: ProcessPoolExecutor | None = None

    def start(self) -> None:
        """Start the children and wait until each has its validator (idempotent)."""
        if self._executor is not None:
            return
        self._executor = ProcessPoolExecutor(
            max_workers=self.processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_child,
            initargs=(self.config.model_dump_json(), self.recipe, self.make_validator),
        )
        # One ping per child starts them all now rather than on the batch's critical path.
        for f in [self._executor.submit(_ping) for _ in range(self.processes)]:
            f.result()

    def submit(self, job: SandboxJob) -> Future[ValidationReport]:
        self.start()
        assert self._executor is not None
        return self._executor.submit(_run_job, job)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def __enter__(self) -> ValidatorProcesses:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
