"""Configuration of the validation pipeline: one validated model, passed down to every stage."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .codes import STAGE_ORDER, Stage


class ValidationConfig(BaseModel):
    """Every knob of the pipeline. Defaults are tuned so that a typical seed environment
    validates end to end (all stages, about 200 fuzz steps) in well under a second.

    Loadable from the ``[validation]`` table of ``spade.toml`` via :meth:`from_section`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Stages to run, in pipeline order; a stage left out is recorded as skipped.
    stages: tuple[Stage, ...] = STAGE_ORDER
    #: Seed of the load, contract and fuzz episodes.
    seed: int = 0
    #: Seeds on which ``solution()`` is replayed (feasibility) and determinism is checked.
    seeds: tuple[int, ...] = (0, 1, 2)

    # --- static -----------------------------------------------------------------------
    max_source_bytes: int = Field(default=64_000, ge=100)
    max_source_lines: int = Field(default=2_000, ge=10)

    # --- bounds checked on every call --------------------------------------------------
    #: A single reset/step/solution call slower than this is a ``slow_call`` finding.
    call_time_bound_s: float = Field(default=0.25, gt=0)
    #: Hard deadline the sandbox enforces (the worker is killed): ``call_timeout``.
    sandbox_call_timeout_s: float = Field(default=2.0, gt=0)
    #: Wall-clock budget of one candidate's whole validation, every stage together; once
    #: spent, no further call is sent and the candidate is rejected with
    #: ``time_budget_exceeded`` (steps each just under the call deadline cannot keep a
    #: validation running for minutes). A typical environment needs well under a second.
    candidate_budget_s: float = Field(default=30.0, gt=0)
    #: Longest observation an environment may return, in characters.
    max_observation_chars: int = Field(default=16_384, ge=64)
    #: Turn budget when no metadata gives one.
    default_max_turns: int = Field(default=25, ge=1)
    #: Reward range when no metadata gives one.
    default_reward_range: tuple[float, float] = (0.0, 1.0)

    # --- fuzz ----------------------------------------------------------------------------
    #: Hypothesis examples (episodes) per fuzz run.
    fuzz_examples: int = Field(default=16, ge=1)
    #: Shortest and longest action list of one fuzz example (about 200 steps per run).
    fuzz_min_steps: int = Field(default=8, ge=1)
    fuzz_max_steps: int = Field(default=16, ge=1)
    #: Wall-clock budget for shrinking a failing example (Hypothesis' shrinker, then the
    #: same again for deleting actions); past it the smallest failure so far is reported.
    shrink_budget_s: float = Field(default=1.5, ge=0)
    #: Length of the "very long action" generic strategy, in characters.
    long_action_chars: int = Field(default=4_000, ge=16)
    #: Also fuzz with what the environment gives (:mod:`.mutations`): the command templates
    #: it prints, near misses of its solution's actions, episodes after solution prefixes.
    fuzz_from_environment: bool = True

    # --- feasibility / degenerate --------------------------------------------------------
    #: Reward at or above ``low + full_reward_fraction * (high - low)`` counts as full reward.
    full_reward_fraction: float = Field(default=0.999, gt=0, le=1)
    #: Garbage actions earning at least this fraction of the reward range are a defect.
    garbage_reward_fraction: float = Field(default=0.5, gt=0, le=1)
    #: How many distinct probe actions the degenerate checks use.
    probe_actions: int = Field(default=8, ge=2)

    # --- novelty -------------------------------------------------------------------------
    #: Estimated Jaccard similarity of code shingles at or above which a candidate is a
    #: near-duplicate of a stored environment. On the labelled corpus, distinct
    #: environments score at most 0.22 and edited copies at least 0.74.
    novelty_threshold: float = Field(default=0.6, gt=0, le=1)
    minhash_permutations: int = Field(default=128, ge=16)
    shingle_size: int = Field(default=5, ge=1)
    #: Cosine similarity of description embeddings at or above which a candidate is a
    #: near-duplicate (used only where an embedding plugin answers ``spade_embed_texts``).
    #: Calibrated for the built-in lexical embedder (:mod:`spade_designer.embedding`).
    description_threshold: float = Field(default=0.8, gt=0, le=1)

    # --- batches -------------------------------------------------------------------------
    #: Validator processes of :meth:`Validator.validate_many` (0: one per CPU; 1: threads
    #: of the calling process).
    batch_processes: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _bounds(self) -> ValidationConfig:
        if self.sandbox_call_timeout_s < self.call_time_bound_s:
            raise ValueError("sandbox_call_timeout_s must be at least call_time_bound_s")
        if self.candidate_budget_s < self.sandbox_call_timeout_s:
            raise ValueError("candidate_budget_s must be at least sandbox_call_timeout_s (one call's deadline)")
        if self.fuzz_min_steps > self.fuzz_max_steps:
            raise ValueError("fuzz_min_steps must not exceed fuzz_max_steps")
        if not self.seeds:
            raise ValueError("seeds must name at least one seed")
        lo, hi = self.default_reward_range
        if not lo < hi:
            raise ValueError(f"default_reward_range must have low < high; got {self.default_reward_range}")
        order = {s: i for i, s in enumerate(STAGE_ORDER)}
        if list(self.stages) != sorted(set(self.stages), key=order.__getitem__):
            raise ValueError("stages must be distinct and listed in pipeline order: " + ", ".join(s.value for s in STAGE_ORDER))
        return self

    def enabled(self, stage: Stage) -> bool:
        return stage in self.stages

    @classmethod
    def from_section(cls, table: dict[str, Any], **overrides: Any) -> ValidationConfig:
        """Build from a ``[validation]`` config table; ``overrides`` (flags) win."""
        data = dict(table)
        data.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(data)
