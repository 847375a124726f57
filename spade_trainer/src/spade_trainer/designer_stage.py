"""The self-play loop's design stage over the real ``spade_designer.Designer``.

The designer generates with the shared policy (:class:`~.chat_backend.PolicyChatBackend`
over the trainer's own :class:`~.policy.TokenPolicy`), grounds on the configured corpus,
reads its memory from the run's store (where the loop records every measured regret and
win rate), validates in its own sandbox pool and admits into the run's store.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from spade_core.metadata import ValidationReport

from .chat_backend import PolicyChatBackend
from .design_protocol import DesignedCandidate, DesignTurn
from .shaping_signals import code_structure

if TYPE_CHECKING:
    from spade_core.config import SpadeConfig
    from spade_core.plugins import SpadePlugins
    from spade_core.store import EnvStore
    from spade_designer.config import DesignerConfig
    from spade_designer.designer import Designer
    from spade_designer.records import Attempt, CandidateResult

    from .config import SelfPlayConfig
    from .policy import TokenPolicy

#: Used when no leak-free hint could be written: hinted plays then measure no help (regret ~ 0).
FALLBACK_HINT = "Read the rules in the first message carefully and plan each move before acting."


def designer_table_of(config: SelfPlayConfig, spade_config: SpadeConfig | None = None) -> dict[str, Any]:
    """The designer's table of a run, three layers, each laid over the one before key by key
    (nested tables merged): ``[designer]`` of the loaded ``spade.toml`` (the one designer
    table, what ``spade design`` reads too); the sampling of the shared policy
    (``[selfplay.generation]`` ``temperature`` and ``top_p``: the designer's replies are
    trained at the policy's temperature); then ``[selfplay.designer]``. The designer's reply
    budgets have that one home: ``sampling.max_new_tokens`` and ``hint.max_new_tokens`` of
    the designer table, overridden per run in ``[selfplay.designer]``; the agent's is
    ``[selfplay.generation] agent_max_new_tokens``."""
    from spade_core.config_file import merge_tables

    gen = config.generation
    run = {"sampling": {"temperature": gen.temperature or 1.0, "top_p": gen.top_p}}
    base = spade_config.section("designer") if spade_config is not None else {}
    return merge_tables(merge_tables(base, run), config.designer)


def designer_config_of(config: SelfPlayConfig, spade_config: SpadeConfig | None = None) -> DesignerConfig:
    """The run's ``DesignerConfig`` (:func:`designer_table_of`). Raises pydantic's
    ``ValidationError`` for a table the designer does not accept."""
    from spade_designer.config import DesignerConfig

    return DesignerConfig.model_validate(designer_table_of(config, spade_config))


class DesignerStage:
    """:class:`~.design_protocol.DesignStage` over a ``spade_designer.Designer``."""

    def __init__(self, designer: Designer, domain: str) -> None:
        self.designer = designer
        self.domain = domain
        self.hint_fallbacks = 0

    def design(
        self, skill: str, n: int, *, seed: int, agent_stats: dict[str, float] | None = None
    ) -> Sequence[DesignedCandidate]:
        from spade_designer.records import AgentStats

        stats = None
        if agent_stats:
            stats = AgentStats(win_rate=agent_stats.get("win_rate"), regret=agent_stats.get("regret"),
                               episodes=int(agent_stats.get("envs", 0)))
        result = self.designer.design_round(self.domain, skill, n, agent_stats=stats, seed=seed)
        return [candidate(c, skill) for c in result.candidates]

    def write_hint(self, source: str, *, seed: int) -> str:
        res = self.designer.write_hint(source, domain=self.domain, seed=seed)
        if res.accepted and res.hint:
            return str(res.hint)
        self.hint_fallbacks += 1
        return FALLBACK_HINT

    def remember(self, env_id: str, *, win_rate: float, regret: float) -> None:
        """Nothing to do: the designer's memory reads measured stats from the store."""

    def close(self) -> None:
        self.designer.validator.close()


def stages_passed(c: CandidateResult) -> tuple[str, ...]:
    """Stages a candidate passed in at least one attempt (every outcome of the stage ok), in
    the order they were first reached."""
    per_attempt: dict[int, dict[str, list[bool]]] = {}
    for o in c.stages:
        per_attempt.setdefault(o.attempt, {}).setdefault(o.stage, []).append(bool(o.ok))
    passed: list[str] = []
    for stages in per_attempt.values():
        for stage, oks in stages.items():
            if all(oks) and stage not in passed:
                passed.append(stage)
    return tuple(passed)


_SIMILARITY = re.compile(r"at similarity (\d+(?:\.\d+)?)")


def novelty_score(report: ValidationReport | None) -> float | None:
    """The novelty stage's score of a validation report: ``1 - similarity`` to the nearest
    stored environment, 1.0 when there was nothing to compare with, ``None`` when the
    stage did not run.

    The stage states the similarity in ``Finding.details["similarity"]`` when it rejects,
    and in its message (``"... at similarity 0.42"``) when it passes.
    """
    if report is None:
        return None
    for f in report.findings:
        if f.stage != "novelty":
            continue
        sim = f.details.get("similarity") if f.details else None
        if sim is None:
            m = _SIMILARITY.search(f.message)
            if m is None:
                return 1.0 if f.ok else None  # passed with no stored environment to compare with
            sim = float(m.group(1))
        return max(0.0, min(1.0, 1.0 - float(sim)))
    return None


def candidate_novelty(c: CandidateResult) -> float | None:
    """Novelty of the attempt that decided a candidate (the passing one, else the last)."""
    attempts = c.attempts
    decided = next((a for a in reversed(attempts) if a.passed), attempts[-1] if attempts else None)
    return novelty_score(decided.report) if decided is not None else None


def design_turns(c: CandidateResult) -> tuple[DesignTurn, ...]:
    """Every attempt of a ``CandidateResult`` as a :class:`DesignTurn` with its own tokens,
    outcome, code structure and novelty (credit follows the tokens that earned it)."""
    turns = []
    a: Attempt
    for a in c.attempts:
        comp = a.completion
        turns.append(DesignTurn(
            number=int(a.number),
            passed=bool(a.passed),
            failed_stage=a.failed_stage,
            prompt_ids=list(comp.prompt_ids) if comp is not None and comp.prompt_ids else None,
            completion_ids=list(comp.completion_ids) if comp is not None and comp.completion_ids else None,
            logprobs=list(comp.logprobs) if comp is not None and comp.logprobs is not None else None,
            code_structure=code_structure(a.reply),
            novelty=novelty_score(a.report),
        ))
    return tuple(turns)


def candidate(c: CandidateResult, skill: str) -> DesignedCandidate:
    """Map a ``spade_designer`` ``CandidateResult`` onto :class:`DesignedCandidate`."""
    comp = c.completion
    meta = c.metadata
    turns = design_turns(c)
    return DesignedCandidate(
        skill=skill,
        valid=bool(c.valid),
        admitted=bool(c.admitted),
        env_id=meta.id if (meta is not None and c.admitted) else None,
        failed_stage=None if c.admitted else c.rejected_stage,
        stages_passed=stages_passed(c),
        novelty=candidate_novelty(c),
        prompt_ids=list(comp.prompt_ids) if comp is not None and comp.prompt_ids else None,
        completion_ids=list(comp.completion_ids) if comp is not None and comp.completion_ids else None,
        logprobs=list(comp.logprobs) if comp is not None and comp.logprobs is not None else None,
        reasons=tuple(c.reasons),
        # the first attempt's whole reply (scaffold prefill included), as its turn measured it
        code_structure=turns[0].code_structure if turns else 0.0,
        turns=turns,
        source=c.source or (c.attempts[-1].reply if c.attempts else None),
        hint=c.hint.hint if c.hint is not None and c.hint.accepted else None,
    )


def build_designer_stage(
    policy: TokenPolicy, tokenizer: Any, config: SelfPlayConfig, spade_config: SpadeConfig, *,
    store: EnvStore, plugins: SpadePlugins,
) -> DesignerStage:
    """The designer stage of a run: the designer generating with ``policy``, grounded,
    remembering and admitting in ``store``, validating with ``spade_config``'s
    ``[validation]`` (the configuration the command loaded, never one looked up here)."""
    from spade_designer.assembly import assemble_designer

    backend = PolicyChatBackend(policy, tokenizer, name="policy", model_name=config.model.source)
    designer = assemble_designer(spade_config, designer_config_of(config, spade_config), store=store, plugins=plugins,
                                 backend=backend)
    return DesignerStage(designer, config.domain)
