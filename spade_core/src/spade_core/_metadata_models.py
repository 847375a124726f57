"""The pydantic models of :mod:`spade_core.metadata` (import them from there).

They live in their own module so that ``spade_core.metadata``'s light names
(``ActionFormat``, ``EnvStatus``, ``code_hash``...) cost no pydantic: plugin modules that
``import spade_core`` loads use those, and pydantic is a fifth of the import budget.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .names import NAME_RE, SCHEMA_VERSION, ActionFormat, EnvStatus, utcnow


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Finding(_Model):
    """One observation of a validation stage."""

    stage: str
    ok: bool
    message: str
    #: Machine-readable reason code (e.g. ``"banned_import"``, ``"near_duplicate"``).
    code: str | None = None
    #: Replayable action list that reproduces a failure, when there is one.
    actions: list[str] | None = None
    seed: int | None = None
    details: dict[str, Any] = Field(default_factory=dict)


class ValidationReport(_Model):
    """Outcome of the validation pipeline for one code version."""

    passed: bool
    #: The stage that rejected the environment, or ``None`` when it passed.
    failed_stage: str | None = None
    reasons: list[str] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    #: Seconds spent per stage.
    timings: dict[str, float] = Field(default_factory=dict)
    feasibility_proven: bool = False
    #: id of the near-duplicate twin in the store, when novelty rejected it.
    duplicate_of: str | None = None
    validated_at: datetime = Field(default_factory=utcnow)

    @model_validator(mode="after")
    def _consistent(self) -> ValidationReport:
        if self.passed and self.failed_stage is not None:
            raise ValueError("a passed report cannot name a failed_stage")
        if not self.passed and self.failed_stage is None:
            raise ValueError("a failed report must name failed_stage")
        return self


class Learnability(_Model):
    """What ``spade experiment learn`` measured of an environment: held-out success of the
    untrained policy and after ``updates`` GRPO updates on it (95% Wilson intervals), beside a
    learning-rate-0 control and the best constant reply, and the one-word verdict:
    ``learnable`` (rose, above the constant, control flat), ``no_signal`` (no update had a
    sample with signal), ``gameable`` (a constant reply wins as often as the trained policy),
    ``not_learned`` (signal, no rise in ``updates``)."""

    verdict: Literal["learnable", "no_signal", "gameable", "not_learned"]
    updates: int = Field(ge=0)
    episodes: int = Field(ge=1)
    untrained: float = Field(ge=0.0, le=1.0)
    untrained_interval: tuple[float, float]
    trained: float = Field(ge=0.0, le=1.0)
    trained_interval: tuple[float, float]
    control: float | None = Field(default=None, ge=0.0, le=1.0)
    constant: float = Field(ge=0.0, le=1.0)
    constant_action: str = Field(default="", max_length=1_000)
    #: The environment as the experiment named it (``NAME[:KNOB=VALUE,...]``).
    target: str = Field(default="", max_length=1_000)
    learning_rate: float | None = None
    #: The run folder that holds the curve (``learning.json``).
    run: str | None = Field(default=None, max_length=4_000)


class StatsSnapshot(_Model):
    """Measured play statistics of an environment at one policy snapshot."""

    policy_snapshot: str = Field(min_length=1, description="checkpoint / training step identifier")
    samples: int = Field(ge=0)
    win_rate: float = Field(ge=0.0, le=1.0)
    regret: float | None = Field(default=None, ge=0.0)
    mean_return_hinted: float | None = Field(default=None, ge=-1.0, le=1.0)
    mean_return_unhinted: float | None = Field(default=None, ge=-1.0, le=1.0)
    #: Set when the snapshot is a learnability measurement (its ``win_rate`` is then the
    #: untrained policy's held-out success).
    learnability: Learnability | None = None
    measured_at: datetime = Field(default_factory=utcnow)


class DocumentRef(_Model):
    """Which grounding document an environment was designed from."""

    corpus: str
    doc_id: str
    title: str | None = None
    sha256: str | None = None


#: A knob value an edit may set (JSON carries each of these exactly).
KnobValue = bool | int | float | str


class EnvEdit(_Model):
    """How an environment was made by editing its parent (``EnvMetadata.edit``).

    ``kind`` is ``"parameter"`` (new values for the parent's declared knobs: ``values``,
    with the parent's in ``previous``) or ``"code"`` (a change to the parent's source:
    ``diff`` is the unified diff from the parent's code to the child's).
    Added to schema version 1 as an optional field: records without it read unchanged.
    """

    kind: Literal["parameter", "code"]
    parent_id: str = Field(min_length=1)
    values: dict[str, KnobValue] = Field(default_factory=dict)
    previous: dict[str, KnobValue] = Field(default_factory=dict)
    diff: str | None = Field(default=None, max_length=64_000)


class EnvMetadata(_Model):
    """Everything SPADE knows about one version of one environment."""

    schema_version: Literal[1] = SCHEMA_VERSION
    #: Unique id of this version: ``<name>-v<version>``.
    id: str = ""
    name: str = Field(min_length=1, max_length=120)
    version: int = Field(default=1, ge=1)
    domain: str = Field(min_length=1, max_length=64)
    skill: str = Field(min_length=1, max_length=120)
    description: str = Field(default="", max_length=10_000)
    difficulty: float | None = Field(default=None, ge=0.0, le=1.0)
    max_turns: int = Field(default=25, ge=1, le=10_000)
    reward_range: tuple[float, float] = (0.0, 1.0)
    action_format: ActionFormat = ActionFormat.boxed
    class_name: str | None = None
    document: DocumentRef | None = None
    designer_model: str | None = None
    parent_ids: list[str] = Field(default_factory=list)
    code_hash: str = Field(default="", description="sha256 of the source; filled by the store")
    hint: str | None = Field(default=None, max_length=4_000)
    nondeterministic: bool = False
    #: Every seed gives the same game on purpose (one fixed puzzle): validation then does
    #: not ask different seeds for different games.
    fixed_instance: bool = False
    validation: ValidationReport | None = None
    stats: list[StatsSnapshot] = Field(default_factory=list)
    status: EnvStatus = EnvStatus.candidate
    tags: list[str] = Field(default_factory=list)
    #: The edit that made this environment from its parent (``None``: written from scratch).
    edit: EnvEdit | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)

    @field_validator("name")
    @classmethod
    def _name_ok(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError(
                "name must start with a letter and contain only letters, digits, '_' and '.' "
                f"(it becomes the Gymnasium id spade/<name>-v<N>); got {v!r}"
            )
        return v

    @field_validator("code_hash")
    @classmethod
    def _hash_ok(cls, v: str) -> str:
        if v and not re.fullmatch(r"[0-9a-f]{64}", v):
            raise ValueError("code_hash must be 64 lowercase hex characters (sha256)")
        return v

    @field_validator("reward_range")
    @classmethod
    def _range_ok(cls, v: tuple[float, float]) -> tuple[float, float]:
        lo, hi = v
        if not (lo < hi) or any(x != x or x in (float("inf"), float("-inf")) for x in v):
            raise ValueError(f"reward_range must be finite with low < high; got {v}")
        return v

    @model_validator(mode="after")
    def _fill_id(self) -> EnvMetadata:
        expected = f"{self.name}-v{self.version}"
        if not self.id:
            object.__setattr__(self, "id", expected)
        elif self.id != expected:
            raise ValueError(f"id {self.id!r} does not match name and version ({expected!r})")
        return self

    @property
    def gym_id(self) -> str:
        return f"spade/{self.id}"

    @property
    def latest_stats(self) -> StatsSnapshot | None:
        return self.stats[-1] if self.stats else None


def json_schema() -> dict[str, Any]:
    """The JSON Schema of :class:`EnvMetadata` (the published metadata contract)."""
    schema = EnvMetadata.model_json_schema()
    schema["$id"] = f"https://spade.dev/schemas/env-metadata-v{SCHEMA_VERSION}.json"
    return schema
