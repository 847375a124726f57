"""What a design round produces: one record per candidate, every attempt kept.

Plain dataclasses (internal results); :meth:`RoundResult.summary` and
:meth:`RoundResult.to_json` are the boundary forms used by the CLI and reports.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from spade_core.metadata import DocumentRef, EnvMetadata, ValidationReport

from .llm.base import Completion, Conversation

#: Stages a candidate can be rejected at besides the validation pipeline's own.
EXTRACT = "extract"
HINT = "hint"
ADMISSION = "admission"
GENERATION = "generation"


@dataclass(frozen=True)
class AgentStats:
    """The agent's recent performance on the skill being designed for (prompt context)."""

    win_rate: float | None = None
    regret: float | None = None
    episodes: int = 0

    def __post_init__(self) -> None:
        if self.win_rate is not None and not 0.0 <= self.win_rate <= 1.0:
            raise ValueError(f"win_rate must be in [0, 1], got {self.win_rate}")
        if self.regret is not None and self.regret < 0:
            raise ValueError(f"regret must be >= 0, got {self.regret}")
        if self.episodes < 0:
            raise ValueError(f"episodes must be >= 0, got {self.episodes}")


@dataclass
class StageOutcome:
    """One stage a candidate went through (``extract``, each validation stage, ``hint``,
    ``admission``), with the attempt it belongs to."""

    stage: str
    ok: bool
    message: str
    attempt: int = 0


@dataclass
class Attempt:
    """One generation of a candidate: the first design (``number`` 0) or a repair."""

    number: int
    conversation: Conversation
    completion: Completion | None
    #: The reply's prefilled start (a scaffold) that the completion continues, or "".
    prefill: str = ""
    source: str | None = None
    class_name: str | None = None
    extraction_error: str | None = None
    #: The stage ``extraction_error`` belongs to: ``extract`` for a design, ``apply`` for an
    #: edit that does not make a child of its parent.
    error_stage: str = EXTRACT
    report: ValidationReport | None = None
    #: Id in the store when the attempt was kept there.
    stored_id: str | None = None

    @property
    def reply(self) -> str:
        """The whole reply: the prefilled start, then the generated text."""
        return self.prefill + (self.completion.text if self.completion else "")

    @property
    def passed(self) -> bool:
        return self.report is not None and self.report.passed

    @property
    def failed_stage(self) -> str | None:
        if self.extraction_error is not None:
            return self.error_stage
        if self.report is not None and not self.report.passed:
            return self.report.failed_stage
        return None

    def findings_text(self, limit: int) -> list[str]:
        """The failing (then other) findings as lines a repair prompt can quote."""
        if self.extraction_error is not None:
            return [f"[{self.error_stage}] {self.extraction_error}"]
        if self.report is None:
            return []
        failing = [f for f in self.report.findings if not f.ok]
        lines = []
        for f in failing[:limit]:
            line = f"[{f.stage}] {f.message}"
            if f.seed is not None or f.actions:
                line += f" (seed {f.seed}, actions {f.actions})"
            lines.append(line)
        for reason in self.report.reasons:
            if not any(reason.split(": ", 1)[-1] in line for line in lines):
                lines.append(f"[{self.report.failed_stage}] {reason}")
        return lines[:limit]


@dataclass
class HintAttempt:
    text: str
    hint: str
    #: Why the hint was rejected, or ``None`` when it was accepted.
    leak: str | None
    completion: Completion | None = None


@dataclass
class HintResult:
    """A privileged hint for one environment, or why none was accepted."""

    hint: str | None
    accepted: bool
    reason: str | None = None
    attempts: list[HintAttempt] = field(default_factory=list)
    conversation: Conversation | None = None
    completion: Completion | None = None


@dataclass
class CandidateResult:
    index: int
    document: DocumentRef | None
    #: Ids of the memory examples the design prompt showed.
    memory_ids: list[str]
    attempts: list[Attempt] = field(default_factory=list)
    stages: list[StageOutcome] = field(default_factory=list)
    metadata: EnvMetadata | None = None
    hint: HintResult | None = None
    admitted: bool = False
    rejected_stage: str | None = None
    reasons: list[str] = field(default_factory=list)

    @property
    def source(self) -> str | None:
        """The latest extracted code (the admitted one when admitted)."""
        for a in reversed(self.attempts):
            if a.source is not None:
                return a.source
        return None

    @property
    def conversation(self) -> Conversation:
        """The design prompt (first attempt): the designer role's turn for training."""
        return self.attempts[0].conversation

    @property
    def completion(self) -> Completion | None:
        return self.attempts[0].completion

    @property
    def valid(self) -> bool:
        return any(a.passed for a in self.attempts)

    @property
    def repairs(self) -> int:
        return max(0, len(self.attempts) - 1)


@dataclass
class RoundResult:
    domain: str
    skill: str
    difficulty: float | None
    seed: int | None
    model: str
    candidates: list[CandidateResult]
    #: Seconds per phase: prompt, generation, extraction, validation, hint, admission.
    timings: dict[str, float] = field(default_factory=dict)
    completion_tokens: int = 0
    prompt_tokens: int = 0

    @property
    def admitted(self) -> list[CandidateResult]:
        return [c for c in self.candidates if c.admitted]

    @property
    def rejected_by_stage(self) -> dict[str, int]:
        counts = Counter(c.rejected_stage for c in self.candidates if not c.admitted and c.rejected_stage)
        return dict(sorted(counts.items()))

    def summary(self) -> dict[str, Any]:
        return {
            "domain": self.domain,
            "skill": self.skill,
            "model": self.model,
            "designed": len(self.candidates),
            "extracted": sum(1 for c in self.candidates if c.source is not None),
            "valid": sum(1 for c in self.candidates if c.valid),
            "admitted": len(self.admitted),
            "rejected": len(self.candidates) - len(self.admitted),
            "rejected_by_stage": self.rejected_by_stage,
            "repairs": sum(c.repairs for c in self.candidates),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "timings_s": {k: round(v, 3) for k, v in self.timings.items()},
        }

    def to_json(self) -> dict[str, Any]:
        out = self.summary()
        out["candidates"] = [
            {
                "index": c.index,
                "env_id": c.metadata.id if c.metadata else None,
                "admitted": c.admitted,
                "rejected_stage": c.rejected_stage,
                "reasons": c.reasons,
                "document": c.document.model_dump() if c.document else None,
                "memory_ids": c.memory_ids,
                "hint": c.hint.hint if c.hint else None,
                "attempts": [
                    {
                        "number": a.number,
                        "failed_stage": a.failed_stage,
                        "stored_id": a.stored_id,
                        "completion_tokens": a.completion.completion_tokens if a.completion else 0,
                    }
                    for a in c.attempts
                ],
            }
            for c in self.candidates
        ]
        return out
