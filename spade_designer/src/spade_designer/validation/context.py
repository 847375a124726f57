"""The state one validation run carries from stage to stage."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spade_core.domains import Domain
from spade_core.errors import PluginError
from spade_core.metadata import EnvMetadata, Finding

from .codes import Reason, Stage
from .config import ValidationConfig
from .errors import ValidationInputError
from .runner import FATAL, Bounds, EnvRunner, Instance, Rejection


@dataclass(frozen=True)
class Candidate:
    """What the pipeline knows about the environment under validation."""

    source: str
    max_turns: int
    reward_range: tuple[float, float]
    class_name: str | None = None
    allowed_modules: tuple[str, ...] = ()
    nondeterministic: bool = False
    #: The metadata declares one game for every seed (no seed-sensitivity check).
    fixed_instance: bool = False
    hint: str | None = None
    #: Store id of this environment, excluded when looking for its near-duplicates.
    env_id: str | None = None
    description: str = ""

    @property
    def full_reward(self) -> float:
        return self.reward_range[1]


@dataclass
class Run:
    """One pass of the pipeline over one candidate."""

    candidate: Candidate
    config: ValidationConfig
    runner: EnvRunner | None
    domain: Domain | None = None
    #: The index of known environments (:class:`..minhash.NoveltyIndex`).
    novelty: Any = None
    #: A batch's earlier candidates that passed (same type as ``novelty``), or ``None``.
    peers: Any = None
    #: The candidate's metadata as given (passed on to validator processes).
    metadata: EnvMetadata | None = None
    findings: list[Finding] = field(default_factory=list)
    instance: Instance | None = None
    #: ``solution()`` after ``reset(seed)``, per seed (``None``: not provided).
    solutions: dict[int, list[str] | str | None] = field(default_factory=dict)
    solution_errors: dict[int, Rejection] = field(default_factory=dict)
    #: The tools' parameter names per seed, read when ``solution()`` is a string
    #: (:func:`.solutions.tool_params`; ``None``: no tools, or not readable).
    tool_params: dict[int, dict[str, list[str]] | None] = field(default_factory=dict)
    #: Distinct actions the fuzzer sent, reused as probes by the degenerate checks.
    fuzz_actions: list[str] = field(default_factory=list)
    feasibility_proven: bool = False
    duplicate_of: str | None = None
    fuzz_steps: int = 0
    #: ``time.monotonic()`` at which the candidate's budget (``config.candidate_budget_s``)
    #: is spent; set when the pipeline starts on it.
    deadline: float | None = None
    #: Where the reward range being enforced comes from: "class attribute", "metadata",
    #: "domain" or "default".
    reward_range_source: str = "default"
    #: A second runner in another process (another hash seed, another address layout), for
    #: replays that must not depend on the process; ``None`` (or returning ``None``): none.
    alternate: Callable[[], EnvRunner | None] | None = None
    #: Winning episodes met while fuzzing, ``(seed, actions)``: a found path to full reward
    #: proves feasibility where ``solution()`` gives none.
    found_wins: list[tuple[int, list[str]]] = field(default_factory=list)

    @property
    def bounds(self) -> Bounds:
        return Bounds(
            reward_range=self.candidate.reward_range,
            max_observation_chars=self.config.max_observation_chars,
            call_time_bound_s=self.config.call_time_bound_s,
        )

    def new_instance(self, runner: EnvRunner | None = None) -> Instance:
        """A fresh instance of the candidate in ``runner`` (default: the run's; spawned on
        first use)."""
        if self.runner is None:
            raise RuntimeError("this run has no runner: only the static stage can run")
        return Instance(
            runner or self.runner,
            self.candidate.source,
            self.bounds,
            allowed_modules=self.candidate.allowed_modules,
            class_name=self.candidate.class_name,
            deadline=self.deadline,
            budget_s=self.config.candidate_budget_s,
        )

    def env(self) -> Instance:
        """The run's main instance, spawned on first use and respawned after a fatal error."""
        if self.instance is None:
            self.instance = self.new_instance()
        self.instance.spawn()
        return self.instance

    def close(self) -> None:
        if self.instance is not None:
            self.instance.close()
            self.instance = None

    def solution(self, seed: int) -> list[str] | str | None:
        """``solution()`` for ``seed`` (the answer depends on the hidden state that reset drew).

        A broken ``solution()`` reads as ``None`` here, so earlier stages carry on without
        it; the feasibility stage reports it (:meth:`solution_error`).
        """
        if seed not in self.solutions:
            env = self.env()
            env.reset(seed)
            try:
                self.solutions[seed] = env.solution()
            except Rejection as rej:
                if rej.code in FATAL:
                    raise
                self.solutions[seed] = None
                self.solution_errors[seed] = rej
            if isinstance(self.solutions[seed], str) and self.action_format != "boxed":
                # a string may write tool calls in Python syntax: their names and positional
                # arguments are read against this episode's tool schemas, when it has some
                from .solutions import tool_params

                try:
                    self.tool_params[seed] = tool_params(env.tool_schemas())
                except Rejection as rej:
                    if rej.code in FATAL:
                        raise
                    self.tool_params[seed] = None
        return self.solutions[seed]

    def solution_plans(self, seed: int) -> list[list[str]]:
        """The action sequences ``solution()`` spells out on ``seed``: the list itself, or
        the readings of a string solution in the domain's format (:mod:`.solutions`);
        empty when there is none to replay."""
        sol = self.solution(seed)
        if isinstance(sol, list):
            return [sol] if sol else []
        if isinstance(sol, str):
            from .solutions import solution_plans

            return solution_plans(sol, self.action_format, self.tool_params.get(seed))
        return []

    @property
    def action_format(self) -> Any:
        """The domain's action format; without a domain, the metadata's when it names tool
        calls (its default says boxed, which is not a statement); else ``None``."""
        if self.domain is not None:
            return self.domain.action_format
        fmt = getattr(self.metadata, "action_format", None)
        return fmt if fmt == "tool_call" else None

    def solution_actions(self) -> set[str]:
        """Every action of every replayable solution on the configured seeds."""
        out: set[str] = set()
        for seed in self.config.seeds:
            for plan in self.solution_plans(seed)[:1]:
                out.update(plan)
        return out

    def solution_error(self, seed: int) -> Rejection | None:
        self.solution(seed)
        return self.solution_errors.get(seed)

    def note(self, stage: Stage, message: str, *, code: Reason | None = None, actions: list[str] | None = None,
             seed: int | None = None, **details: Any) -> None:
        """Record a passing observation (with the replay that shows it, if any)."""
        self.findings.append(
            Finding(stage=stage.value, ok=True, message=message, code=code.value if code else None,
                    actions=actions, seed=seed, details=details)
        )

    def full_reward_threshold(self) -> float:
        lo, hi = self.candidate.reward_range
        return lo + self.config.full_reward_fraction * (hi - lo)


def new_run(
    source: str,
    *,
    metadata: EnvMetadata | None,
    domain: Domain | str | None,
    hint: str | None,
    config: ValidationConfig,
) -> Run:
    """The run of one candidate: what the pipeline knows of it (:class:`Candidate`: its
    turn cap, the reward range enforced, its class, modules, declarations and hint) from
    the source, its metadata and its domain. Raises :class:`ValidationInputError` on
    arguments of the wrong type."""
    from spade_core.env import declares_fixed_instance

    if not isinstance(source, str):
        raise ValidationInputError(f"source must be str, got {type(source).__name__}")
    if metadata is not None and not isinstance(metadata, EnvMetadata):
        raise ValidationInputError(f"metadata must be EnvMetadata, got {type(metadata).__name__}")
    dom = resolve_domain(domain, metadata, source=source)
    reward_range, where = reward_range_for(source, metadata, dom, config)
    candidate = Candidate(
        source=source,
        max_turns=metadata.max_turns if metadata else config.default_max_turns,
        reward_range=reward_range,
        class_name=metadata.class_name if metadata else None,
        allowed_modules=tuple(sorted(dom.allowed_modules)) if dom else (),
        nondeterministic=metadata.nondeterministic if metadata else False,
        fixed_instance=(metadata.fixed_instance if metadata else False) or declares_fixed_instance(source),
        hint=hint if hint is not None else (metadata.hint if metadata else None),
        env_id=metadata.id if metadata else None,
        description=metadata.description if metadata else "",
    )
    run = Run(candidate=candidate, config=config, runner=None, domain=dom, metadata=metadata)
    run.reward_range_source = where
    return run


def resolve_domain(domain: Domain | str | None, metadata: EnvMetadata | None, *, source: str | None = None) -> Domain | None:
    """The domain object for a name (or the metadata's domain); ``None`` when not installed.

    With neither (or a metadata domain that no plugin provides) and a ``source``, the
    domain whose helper module provides a base the source subclasses without importing
    it (:func:`spade_core.domains.domain_for_source`: a reference tool-use environment
    subclassing ``ToolUseBaseEnv`` is the tool-use domain's), so such a source loads
    unchanged without ``--domain``.
    """
    if isinstance(domain, Domain):
        return domain
    name = domain if isinstance(domain, str) else (metadata.domain if metadata else None)
    from spade_core.plugins import get_plugins

    if name is not None:
        try:
            return get_plugins().domain(name)
        except PluginError as exc:
            if isinstance(domain, str):  # asked for explicitly: the caller must know
                raise ValidationInputError(str(exc)) from None
            # metadata names a domain whose plugin is not installed: inferred, or generic probes
    if source is None:
        return None
    from spade_core.domains import domain_for_source

    try:
        return domain_for_source(source, get_plugins().domains().values())
    except PluginError:
        return None


def reward_range_for(
    source: str, metadata: EnvMetadata | None, domain: Domain | None, config: ValidationConfig
) -> tuple[tuple[float, float], str]:
    """The reward range the validator enforces, and where it comes from.

    In order: the class attribute ``reward_range`` the source declares
    (:func:`spade_core.env.declared_reward_range`, the old Gym convention, inherited from
    bases in the same source); the metadata's, when it was set explicitly; the domain's
    (the tool-use domain's [-0.1, 1], as its reference base gives -0.1 for a format error);
    ``config.default_reward_range``. A malformed declaration is the static stage's to report.
    """
    from spade_core.env import declared_reward_range
    from spade_core.errors import EnvContractError

    try:
        declared = declared_reward_range(source, metadata.class_name if metadata else None)
    except (SyntaxError, ValueError, RecursionError, MemoryError, EnvContractError):
        declared = None
    if declared is not None:
        return declared, "class attribute"
    if metadata is not None and "reward_range" in metadata.model_fields_set:
        return tuple(metadata.reward_range), "metadata"  # type: ignore[return-value]
    if domain is not None:
        return tuple(domain.reward_range), "domain"  # type: ignore[return-value]
    return tuple(config.default_reward_range), "default"  # type: ignore[return-value]


