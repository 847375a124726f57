"""The validation pipeline: :class:`Validator` and :func:`fuzz`.

Every environment passes the same stages before admission (see :class:`.codes.Stage`);
the first failure stops the pipeline and the report names the stage, the reason code and,
where there is one, a replayable ``(seed, actions)`` pair. All environment code runs in
the sandbox pool; only the static stage runs here, and it executes nothing.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spade_core.domains import Domain
from spade_core.errors import PluginError
from spade_core.metadata import EnvMetadata, Finding, ValidationReport

from .codes import STAGE_ORDER, Reason, Stage
from .config import ValidationConfig
from .context import Run, new_run, resolve_domain, reward_range_for  # noqa: F401 (re-exported)
from .descriptions import plugin_embedder
from .minhash import MinHasher, NoveltyIndex
from .processes import CALLER_STAGES, PoolRecipe, SandboxJob, ValidatorProcesses, pool_recipe, sandbox_stages
from .runner import EnvRunner, Rejection
from .stages import contract, degenerate, determinism, feasibility, load, novelty, static
from .stages import fuzz as fuzz_stage

if TYPE_CHECKING:
    from spade_core.store import EnvStore
    from spade_sandbox.launcher import SandboxLauncher

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


def default_pool(config: ValidationConfig, launcher: SandboxLauncher | None = None) -> EnvRunner:
    """A sandbox pool made by ``launcher`` (``None``: ``[spade.sandbox]``'s defaults) whose
    hard call deadline is the pipeline's ``sandbox_call_timeout_s``."""
    from spade_sandbox.launcher import SandboxLauncher

    pool = (launcher or SandboxLauncher()).pool(call_timeout_s=config.sandbox_call_timeout_s)
    return pool  # type: ignore[return-value]


class Validator:
    """Runs the pipeline. ``pool`` is a ``spade_sandbox.SandboxPool`` (when not given,
    created on first need by ``launcher``, the ``[spade.sandbox]`` settings loaded at the
    edge, default their defaults, and closed by :meth:`close`).

    ``novelty`` is the index of known environments; it is filled from ``store`` on every
    :meth:`validate` call that passes one (signatures are cached by code hash). By default
    its descriptions are embedded through the ``spade_embed_texts`` hook (code-only
    novelty where no plugin answers).
    """

    def __init__(
        self,
        pool: EnvRunner | None = None,
        config: ValidationConfig | None = None,
        *,
        launcher: SandboxLauncher | None = None,
        novelty: NoveltyIndex | None = None,
        static_checker: Callable[..., Any] | None = None,
    ) -> None:
        self.config = config or ValidationConfig()
        self._pool = pool
        self._launcher = launcher
        self._owns_pool = pool is None
        self._pool_lock = threading.Lock()
        # ``is None``, not ``or``: an empty index is falsy (it has a length).
        self.novelty = novelty if novelty is not None else NoveltyIndex(
            MinHasher(permutations=self.config.minhash_permutations, shingle_size=self.config.shingle_size),
            embedder=plugin_embedder(),
        )
        self._static_checker = static_checker
        self._processes: ValidatorProcesses | None = None
        self._alternate: EnvRunner | None = None
        self._no_alternate = False

    @property
    def pool(self) -> EnvRunner:
        with self._pool_lock:
            if self._pool is None:
                self._pool = default_pool(self.config, self._launcher)
            return self._pool

    def alternate_pool(self) -> EnvRunner | None:
        """A second sandbox pool like this validator's, whose zygote is another process
        (another hash seed): made on first need, ``None`` where the pool cannot be
        rebuilt (a test double, another backend's options)."""
        with self._pool_lock:
            if self._alternate is None and not self._no_alternate:
                recipe = self._recipe()
                if recipe is None:
                    self._no_alternate = True
                else:
                    self._alternate = recipe.build()
                    # the validator made it, so it ends with the validator even when nobody
                    # closes that: an unclosed pool's zygote and workers outlive it otherwise
                    self._alternate_closer = weakref.finalize(self, self._alternate.close)  # type: ignore[attr-defined]
            return self._alternate

    def close(self) -> None:
        if self._alternate is not None:
            self._alternate_closer()
            self._alternate = None
        if self._processes is not None:
            self._processes.close()
            self._processes = None
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
        store: EnvStore | None = None,
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
        store: EnvStore | None = None,
        max_workers: int | None = None,
    ) -> list[ValidationReport]:
        """Validate a batch; reports come back in order.

        Every report is what :meth:`validate` would give for the same request, except that
        the novelty stage also compares each candidate with the batch's earlier candidates
        that passed every other stage (a twin in the batch is named by its metadata id,
        or ``batch[i]`` without one): as if the batch were validated one by one, each
        passing candidate entering the index before the next.

        The sandbox stages run in ``max_workers`` validator processes (default
        ``config.batch_processes``, 0 meaning one per CPU; :mod:`.processes`), each with
        a sandbox pool like this validator's, when such a pool can be rebuilt there (its
        own pool, or an injected default-backend ``SandboxPool``) and every request's
        domain is an installed plugin's; otherwise in threads of this process.
        """
        if store is not None:
            self.novelty.sync(store)
        reqs = [r if isinstance(r, ValidationRequest) else ValidationRequest(r) for r in requests]
        runs = [self._run(r.source, metadata=r.metadata, domain=r.domain, hint=r.hint, config=self.config) for r in reqs]
        width = max_workers or self.config.batch_processes or os.cpu_count() or 1
        recipe = self._recipe()
        if recipe is not None and width > 1 and all(_named_domain(run.domain) for run in runs):
            return self._validate_in_processes(runs, width, recipe)
        return self._validate_in_threads(runs, max_workers)

    def _recipe(self) -> PoolRecipe | None:
        if self._owns_pool:
            from spade_sandbox.launcher import SandboxLauncher

            launcher = self._launcher or SandboxLauncher()
            limits = launcher.limits(call_timeout_s=self.config.sandbox_call_timeout_s)
            return PoolRecipe(limits, launcher.settings.allow_insecure, launcher.settings.backend)
        return pool_recipe(self._pool)

    def _validate_in_processes(self, runs: list[Run], width: int, recipe: PoolRecipe) -> list[ValidationReport]:
        before, after = _split_stages(self.config)
        parts: list[list[ValidationReport]] = []
        pending: dict[int, Future[ValidationReport]] = {}
        sandboxed: set[int] = set()
        for i, run in enumerate(runs):
            first = execute(run, self._no_runner, static_checker=self._static_checker, config=before)
            parts.append([first])
            if first.passed and self._processes_for(width, recipe).config.stages:
                sandboxed.add(i)
                c = run.candidate
                job = SandboxJob(c.source, run.metadata, run.domain.name if run.domain else None, c.hint)
                try:
                    pending[i] = self._processes_for(width, recipe).submit(job)
                except BrokenProcessPool:
                    self._drop_processes()
        peers = self.novelty.peers()
        out = []
        for i, run in enumerate(runs):
            if i in sandboxed:
                parts[i].append(self._sandbox_part(run, pending.get(i)))
            out.append(self._finish(run, parts[i], after, peers, i))
        return out

    def _sandbox_part(self, run: Run, future: Future[ValidationReport] | None) -> ValidationReport:
        """A child's report; when the child died (killed from outside, out of memory) the
        candidate is validated here instead, and the next batch starts fresh processes."""
        if future is not None:
            try:
                return future.result()
            except BrokenProcessPool:
                self._drop_processes()
        run.findings = []
        return execute(run, lambda: self.pool, config=sandbox_stages(self.config))

    def _drop_processes(self) -> None:
        if self._processes is not None:
            self._processes.close()
            self._processes = None

    def _validate_in_threads(self, runs: list[Run], max_workers: int | None) -> list[ValidationReport]:
        before, after = _split_stages(self.config)
        middle = self.config.model_copy(update={"stages": tuple(s for s in self.config.stages if s is not Stage.novelty)})
        pool = self.pool  # create it once, before the threads race for it
        workers = max_workers or max(1, int(getattr(getattr(pool, "limits", None), "workers", 0) or 4))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="spade-validate") as ex:
            futures = [ex.submit(execute, run, lambda: self.pool, static_checker=self._static_checker, config=middle) for run in runs]
            first = [f.result() for f in futures]
        peers = self.novelty.peers()
        return [self._finish(run, [rep], after, peers, i) for i, (run, rep) in enumerate(zip(runs, first, strict=True))]

    def _finish(
        self, run: Run, parts: list[ValidationReport], after: ValidationConfig, peers: NoveltyIndex, index: int
    ) -> ValidationReport:
        """The caller's last stage (novelty, against the store and the batch's earlier
        passing candidates); a candidate that passes it joins ``peers``."""
        if all(p.passed for p in parts) and after.stages:
            run.findings = []
            run.peers = peers
            parts.append(execute(run, self._no_runner, config=after))
        report = combine(parts)
        if report.passed:
            c = run.candidate
            peers.add(c.env_id or f"batch[{index}]", c.source, description=c.description)
        return report

    def _processes_for(self, width: int, recipe: PoolRecipe) -> ValidatorProcesses:
        if self._processes is not None and (self._processes.processes, self._processes.recipe) != (width, recipe):
            self._processes.close()
            self._processes = None
        if self._processes is None:
            self._processes = ValidatorProcesses(self.config, width, recipe, Validator)
        return self._processes

    @staticmethod
    def _no_runner() -> EnvRunner:
        raise RuntimeError("a caller-side stage asked for the sandbox")

    # ------------------------------------------------------------------------------------

    def _run(
        self,
        source: str,
        *,
        metadata: EnvMetadata | None,
        domain: Domain | str | None,
        hint: str | None,
        config: ValidationConfig,
    ) -> Run:
        run = new_run(source, metadata=metadata, domain=domain, hint=hint, config=config)
        run.novelty = self.novelty
        run.alternate = self.alternate_pool
        return run

    def _validate(
        self,
        source: str,
        *,
        metadata: EnvMetadata | None,
        domain: Domain | str | None,
        hint: str | None,
        config: ValidationConfig,
    ) -> ValidationReport:
        run = self._run(source, metadata=metadata, domain=domain, hint=hint, config=config)
        return execute(run, lambda: self.pool, static_checker=self._static_checker)


def _named_domain(domain: Domain | None) -> bool:
    """Whether a child process resolves this domain by name to the same plugin domain."""
    if domain is None:
        return True
    from spade_core.plugins import get_plugins

    try:
        return get_plugins().domain(domain.name) == domain
    except PluginError:
        return False


def _split_stages(config: ValidationConfig) -> tuple[ValidationConfig, ValidationConfig]:
    """``config`` restricted to the caller's stages before the sandbox (static) and after
    it (novelty)."""
    before = tuple(s for s in config.stages if s is Stage.static)
    after = tuple(s for s in config.stages if s is Stage.novelty)
    return config.model_copy(update={"stages": before}), config.model_copy(update={"stages": after})


def combine(parts: Sequence[ValidationReport]) -> ValidationReport:
    """One report from the reports of consecutive stage ranges of one candidate (each
    range run only if the ones before passed)."""
    failed = next((p for p in parts if not p.passed), None)
    timings: dict[str, float] = {}
    for p in parts:
        timings.update(p.timings)
    return ValidationReport(
        passed=failed is None,
        failed_stage=failed.failed_stage if failed else None,
        reasons=list(failed.reasons) if failed else [],
        findings=[f for p in parts for f in p.findings],
        timings=timings,
        feasibility_proven=any(p.feasibility_proven for p in parts),
        duplicate_of=next((p.duplicate_of for p in parts if p.duplicate_of), None),
    )


def execute(
    run: Run,
    runner: Callable[[], EnvRunner],
    *,
    static_checker: Callable[..., Any] | None = None,
    config: ValidationConfig | None = None,
) -> ValidationReport:
    """Run the enabled stages in order until the first rejection; always closes instances.

    ``config`` (default ``run.config``) only chooses the stages; every stage reads its
    settings from ``run.config``."""
    stages = (config or run.config).stages
    timings: dict[str, float] = {}
    failed: Rejection | None = None
    failed_stage: Stage | None = None
    if run.deadline is None:
        run.deadline = time.monotonic() + run.config.candidate_budget_s
    try:
        for stage in STAGE_ORDER:
            if stage not in stages:
                continue
            t0 = time.perf_counter()
            try:
                if stage is not Stage.static and stage not in CALLER_STAGES and time.monotonic() > run.deadline:
                    raise Rejection(
                        Reason.time_budget_exceeded,
                        f"the validation of this candidate used its whole time budget of "
                        f"{run.config.candidate_budget_s:g} s (validation.candidate_budget_s) before the {stage.value} stage",
                        details={"budget_s": run.config.candidate_budget_s},
                    )
                if stage is Stage.static:
                    summary = static.check(run, static_checker)
                else:
                    if run.runner is None and stage not in CALLER_STAGES:
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
    launcher: SandboxLauncher | None = None,
) -> ValidationReport:
    """Fuzz one environment: the static, load and fuzz stages with ``examples`` Hypothesis
    examples. For plugin authors testing their own environments. Without ``pool``, one is
    made by ``launcher`` (see :class:`Validator`)."""
    base = config or ValidationConfig()
    cfg = base.model_copy(update={"stages": (Stage.static, Stage.load, Stage.fuzz), "fuzz_examples": examples})
    validator = Validator(pool, cfg, launcher=launcher)
    try:
        return validator.validate(source, metadata=metadata, domain=domain)
    finally:
        validator.close()
