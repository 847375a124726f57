"""What the self-play loop needs from the designer.

:class:`DesignStage` is the loop's view: design ``n`` candidates for a skill (validated,
admitted into the store when they pass), write a privileged hint for an environment, and
remember measured outcomes. :class:`~.designer_stage.DesignerStage`
implements it over ``spade_designer.Designer``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class DesignedCandidate:
    """One designer output, as the trainer sees it.

    ``prompt_ids`` / ``completion_ids`` / ``logprobs`` are the designer turn the policy
    produced (``None`` when the backend gave no ids: the candidate is then not trained on).
    ``stages_passed`` lists validation stages passed in order; ``failed_stage`` names the
    one that rejected it. ``novelty`` is the validation novelty stage's score in [0, 1]
    (1 - code similarity to the nearest stored environment), ``None`` when the stage did
    not run.
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
    #: :func:`~.progress.code_structure` of the reply: how much of an environment it wrote.
    code_structure: float = 0.0


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
