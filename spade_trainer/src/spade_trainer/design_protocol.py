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
class DesignTurn:
    """One generation of a candidate as the trainer credits it: the first design
    (``number`` 0) or a repair, with its own tokens and its own outcome.

    ``passed`` is whether this turn's code passed validation; ``failed_stage`` the stage
    that rejected it (``"extract"`` when it held no code). ``code_structure`` and
    ``novelty`` grade this turn's reply and report alone.
    """

    number: int
    passed: bool
    failed_stage: str | None
    prompt_ids: list[int] | None
    completion_ids: list[int] | None
    logprobs: list[float] | None
    code_structure: float = 0.0
    novelty: float | None = None

    @property
    def trainable(self) -> bool:
        return bool(self.prompt_ids) and bool(self.completion_ids) and self.logprobs is not None


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
    #: :func:`~.shaping_signals.code_structure` of the reply: how much of an environment it wrote.
    code_structure: float = 0.0
    #: Every generation of the candidate (first design, then repairs), each trained with the
    #: reward of what it produced; empty: the candidate-level fields are its one turn.
    turns: tuple[DesignTurn, ...] = ()
    #: What the run archive keeps (:mod:`~spade_trainer.run_archive`): the code extracted
    #: (else the last reply as written) and the accepted hint.
    source: str | None = None
    hint: str | None = None
    #: The operator that made it: ``write`` (from scratch) or ``edit`` (of ``parent_id``; an
    #: edit's ``edit_kind`` is ``parameter`` or ``code``).
    operator: str = "write"
    parent_id: str | None = None
    edit_kind: str | None = None

    def trained_turns(self) -> tuple[DesignTurn, ...]:
        """The turns to credit: :attr:`turns`, or the candidate itself as a single turn."""
        if self.turns:
            return self.turns
        return (DesignTurn(0, self.valid, self.failed_stage, self.prompt_ids, self.completion_ids, self.logprobs,
                           self.code_structure, self.novelty),)

    def earning_turn(self) -> int | None:
        """Index in :meth:`trained_turns` of the turn whose code was admitted (the last one
        that passed), or ``None``: only it earns the measured reward; a repaired design's
        earlier turns earn their own failures."""
        if not self.admitted:
            return None
        turns = self.trained_turns()
        return next((i for i in range(len(turns) - 1, -1, -1) if turns[i].passed), None)


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
