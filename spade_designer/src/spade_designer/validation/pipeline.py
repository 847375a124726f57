"""The validation pipeline: :class:`Validator` and :func:`fuzz`.

Every environment passes the same stages before admission (see :class:`.codes.Stage`);
the first failure stops the pipeline and the report names the stage, the reason code and,
where there is one, a replayable ``(seed, actions)`` pair. All environment code runs in
the sandbox pool; only the static stage runs here, and it executes nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from spade_core.domains import Domain
from spade_core.errors import PluginError
from spade_core.metadata import EnvMetadata, Finding, ValidationReport

from .codes import STAGE_ORDER, Stage
from .config import ValidationConfig
from .context import Candidate, Run
from .errors import ValidationInputError
from .minhash import MinHasher, NoveltyIndex
from .runner import EnvRunner, Rejection
from .stages import contract, degenerate, determinism, feasibility, load, novelty, static
from .stages import fuzz as fuzz_stage

_CHECKS: dict[Stage, Callable[[Run], str]] = {
    Stage.load: load.check,
    Stage.contract: contract.check,
    Stage.determinism: determinism.check,
    Stage.fuzz: fuzz_stage.check,
    Stage.feasibility: feasibility.check,
    Stage.degenerate: degenerate.check,
    Stage.novelty: novelty.check,
}


@dataclass(frozen=True)
class ValidationRequest:
    """One candidate of a :meth:`Validator.validate_many` batch."""

    source: str
    metadata: EnvMetadata | None = None
    domain: Domain | str | None = None
    hint: str | None = None


def default_pool(config: ValidationConfig) -> EnvRunner:
    """A sandbox pool whose hard call deadline is the pipeline's ``sandbox_call_timeout_s``."""
    from spade_sandbox import SandboxLimits, SandboxPool

    return SandboxPool(limits=SandboxLimits(call_timeout_s=config.sandbox_call_timeout_s))  # type: ignore[return-value]


class Validator:
    """Runs the pipeline. ``pool`` is a ``spade_sandbox.SandboxPool`` (created on first
    need, and closed by :meth:`close`, when not given).

    ``novelty`` is the index of known environments; it is filled from ``store`` on every
    :meth:`validate` call that passes one (signatures are cached by code hash).
    """

    def __init__(
        self,
        pool: EnvRunner | None = None,
        config: ValidationConfig | None = None,
        *,
        novelty: NoveltyIndex | None = None,
        static_checker: Callable[..., Any] | None = None,
    ) -> None:
        self.config = config or ValidationConfig()
        self._pool = pool
        self._owns_pool = pool is None
        self._pool_lock = threading.Lock()
        self.novelty = novelty or NoveltyIndex(
            MinHasher(permutations=self.config.minhash_permutations, shingle_size=self.config.shingle_size)
        )
        self._static_checker = static_checker

    @property
    def pool(self) -> EnvRunner:
        with self._pool_lock:
            if self._pool is None:
                self._pool = default_pool(self.config)
            return self._pool

    def close(self) -> None:
        if self._owns_pool and self._pool is not None:
            self._pool.close()  # type: ignore[attr-defined]
            self._pool = None

    def __enter__(self) -> Validator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------------

    def validate(
        self,
        source: str,
        *,
        metadata: EnvMetadata | None = None,
        domain: Domain | str | None = None,
        hint: str | None = None,
        store: Any = None,
        config: ValidationConfig | None = None,
    ) -> ValidationReport:
        """Validate one environment source; never raises on a bad environment (the report
        says why), raises :class:`ValidationInputError` on bad arguments."""
        if store is not None:
            self.novelty.sync(store)
        return self._validate(source, metadata=metadata, domain=domain, hint=hint, config=config or self.config)

    def validate_many(
        self,
        requests: Sequence[ValidationRequest | str],
        *,
        store: Any = None,
        max_workers: int | None = None,
    ) -> list[ValidationReport]:
        """Validate a batch concurrently through the pool; reports come back in order."""
        if store is not None:
            self.novelty.sync(store)
        reqs = [r if isinstance(r, ValidationRequest) else ValidationRequest(r) for r in requests]
        pool = self.pool  # create it once, before the threads race for it
        workers = max_workers or max(1, int(getattr(getattr(pool, "limits", None), "workers", 0) or 4))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="spade-validate") as ex:
            futures = [
                ex.submit(self._validate, r.source, metadata=r.metadata, domain=r.domain, hint=r.hint, config=self.config)
                for r in reqs
            ]
            return [f.result() for f in futures]

    # ------------------------------------------------------------------------------------

    def _candidate(self, source: Any, metadata: EnvMetadata | None, domain: Domain | None, hint: str | None, config: ValidationConfig) -> Candidate:
        if not isinstance(source, str):
            raise ValidationInputError(f"source must be str, got {type(source).__name__}")
        if metadata is not None and not isinstance(metadata, EnvMetadata):
            raise ValidationInputError(f"metadata must be EnvMetadata, got {type(metadata).__name__}")
        return Candidate(
            source=source,
            max_turns=metadata.max_turns if metadata else config.default_max_turns,
            reward_range=tuple(metadata.reward_range) if metadata else config.default_reward_range,  # type: ignore[arg-type]
            class_name=metadata.class_name if metadata else None,
            allowed_modules=tuple(sorted(domain.allowed_modules)) if domain else (),
            nondeterministic=metadata.nondeterministic if metadata else False,
            hint=hint if hint is not None else (metadata.hint if metadata else None),
            env_id=metadata.id if metadata else None,
            description=metadata.description if metadata else "",
        )

    def _validate(
        self,
        source: str,
        *,
        metadata: EnvMetadata | None,
        domain: Domain | str | None,
        hint: str | None,
        config: ValidationConfig,
    ) -> ValidationReport:
        dom = resolve_domain(domain, metadata)
        run = Run(candidate=self._candidate(source, metadata, dom, hint, config), config=config, runner=None, domain=dom)
        run.novelty = self.novelty
        return execute(run, lambda: self.pool, static_checker=self._static_checker)


def resolve_domain(domain: Domain | str | None, metadata: EnvMetadata | None) -> Domain | None:
    """The domain object for a name (or the metadata's domain); ``None`` when not installed."""
    if isinstance(domain, Domain):
        return domain
    name = domain if isinstance(domain, str) else (metadata.domain if metadata else None)
    if name is None:
        return None
    from spade_core.plugins import get_plugins

    try:
        return get_plugins().domain(name)
    except PluginError as exc:
        if isinstance(domain, str):  # asked for explicitly: the caller must know
            raise ValidationInputError(str(exc)) from None
        return None  # metadata names a domain whose plugin is not installed: generic probes


def execute(run: Run, runner: Callable[[], EnvRunner], *, static_checker: Callable[..., Any] | None = None) -> ValidationReport:
    """Run the enabled stages in order until the first rejection; always closes instances."""
    timings: dict[str, float] = {}
    failed: Rejection | None = None
    failed_stage: Stage | None = None
    try:
        for stage in STAGE_ORDER:
            if not run.config.enabled(stage):
                continue
            t0 = time.perf_counter()
            try:
                if stage is Stage.static:
                    summary = static.check(run, static_checker)
                else:
                    if run.runner is None:
                        run.runner = runner()
                    summary = _CHECKS[stage](run)
            except Rejection as rej:
                failed, failed_stage = rej, stage
                run.findings.append(
                    Finding(
                        stage=stage.value,
                        ok=False,
                        message=rej.message,
                        code=rej.code.value,
                        actions=rej.actions,
                        seed=rej.seed,
                        details=_jsonable(rej.details),
                    )
                )
            else:
                run.findings.append(Finding(stage=stage.value, ok=True, message=summary))
            finally:
                timings[stage.value] = round(time.perf_counter() - t0, 6)
            if failed is not None:
                break
    finally:
        run.close()
    return ValidationReport(
        passed=failed is None,
        failed_stage=failed_stage.value if failed_stage else None,
        reasons=[f"{failed.code.value}: {failed.message}"] if failed else [],
        findings=run.findings,
        timings=timings,
        feasibility_proven=run.feasibility_proven,
        duplicate_of=run.duplicate_of,
    )


def _jsonable(details: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in details.items():
        out[k] = v if isinstance(v, str | int | float | bool | type(None) | list | dict) else repr(v)
    return out


def fuzz(
    source: str,
    *,
    examples: int = 200,
    domain: Domain | str | None = None,
    metadata: EnvMetadata | None = None,
    pool: EnvRunner | None = None,
    config: ValidationConfig | None = None,
) -> ValidationReport:
    """Fuzz one environment: the static, load and fuzz stages with ``examples`` Hypothesis
    examples. For plugin authors testing their own environments."""
    base = config or ValidationConfig()
    cfg = base.model_copy(update={"stages": (Stage.static, Stage.load, Stage.fuzz), "fuzz_examples": examples})
    validator = Validator(pool, cfg)
    try:
        return validator.validate(source, metadata=metadata, domain=domain)
    finally:
        validator.close()
