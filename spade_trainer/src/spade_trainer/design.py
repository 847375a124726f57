"""What the self-play loop needs from the designer, and the adapter over ``spade_designer``.

:class:`DesignStage` is the loop's view: design ``n`` candidates for a skill (validated,
admitted into the store when they pass), write a privileged hint for an environment, and
remember measured outcomes. :class:`DesignerStage` implements it over
``spade_designer.Designer``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class DesignedCandidate:
    """One designer output, as the trainer sees it.

    ``prompt_ids`` / ``completion_ids`` / ``logprobs`` are the designer turn the policy
    produced (``None`` when the backend gave no ids: the candidate is then not trained on).
    ``stages_passed`` lists validation stages passed in order; ``failed_stage`` names the
    one that rejected it.
    """

    skill: str
    valid: bool
    admitted: bool
    env_id: str | None = None
    failed_stage: str | None = None
    stages_passed: tuple[str, ...] = ()
    novelty: float | None = None
    prompt_ids: list[int] | None = None
    completion_ids: list[int] | None = None
    logprobs: list[float] | None = None
    reasons: tuple[str, ...] = field(default_factory=tuple)


class DesignStage(Protocol):
    def design(
        self, skill: str, n: int, *, seed: int, agent_stats: dict[str, float] | None = None
    ) -> Sequence[DesignedCandidate]:
        """Design, validate and (when they pass) admit ``n`` candidates for ``skill``."""
        ...

    def write_hint(self, source: str, *, seed: int) -> str:
        """A 1-3 sentence privileged hint for the environment ``source`` (no answer leakage)."""
        ...

    def remember(self, env_id: str, *, win_rate: float, regret: float) -> None:
        """Tell the designer's memory how an environment measured."""
        ...


def _get(obj: Any, *names: str, default: Any = None) -> Any:
    for n in names:
        if isinstance(obj, dict) and n in obj:
            return obj[n]
        if hasattr(obj, n):
            return getattr(obj, n)
    return default


def candidate_from_designer(item: Any, skill: str) -> DesignedCandidate:
    """Map one ``spade_designer`` round candidate onto :class:`DesignedCandidate`."""
    report = _get(item, "report", "validation")
    meta = _get(item, "metadata", "meta")
    completion = _get(item, "completion")
    valid = bool(_get(report, "passed", default=False)) if report is not None else False
    admitted = bool(_get(item, "admitted", default=valid))
    stages: list[str] = []
    for f in _get(report, "findings", default=[]) or []:
        stage = _get(f, "stage")
        if stage and _get(f, "ok", default=False) and stage not in stages:
            stages.append(stage)
    timings = _get(report, "timings", default={}) or {}
    failed = _get(report, "failed_stage")
    if not stages:
        stages = [s for s in timings if s != failed]
    return DesignedCandidate(
        skill=skill,
        valid=valid,
        admitted=admitted,
        env_id=_get(meta, "id") if admitted else _get(meta, "id"),
        failed_stage=failed,
        stages_passed=tuple(stages),
        novelty=_get(item, "novelty"),
        prompt_ids=_get(completion, "prompt_ids"),
        completion_ids=_get(completion, "completion_ids"),
        logprobs=_get(completion, "logprobs"),
        reasons=tuple(_get(report, "reasons", default=[]) or []),
    )
