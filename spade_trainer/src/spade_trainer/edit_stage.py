"""The design stage with two operators: writing from scratch and editing a frontier parent.

:class:`OperatorDesignStage` wraps the :class:`~.designer_stage.DesignerStage` (composition:
hints, memory and closing are the wrapped stage's). For each design it asks the
:class:`spade_designer.operators.OperatorMix` which operator to use (``[selfplay.designer.edit]``:
``share``, ``mix``), runs the writes through ``Designer.design_round`` and the edits through
``Designer.edit_round`` (an edit with no parent to edit falls back to writing, counted), and
tags every candidate with its operator. The loop reports each design's admission and
reward back (:meth:`feedback`), which is what the bandit learns from; the designer's
GRPO samples of an edit are the edit prompt and reply.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .design_protocol import DesignedCandidate

if TYPE_CHECKING:
    from spade_core.config import SpadeConfig
    from spade_core.plugins import SpadePlugins
    from spade_core.store import EnvStore
    from spade_designer.designer import Designer
    from spade_designer.operators import OperatorMix

    from .config import RewardSettings, SelfPlayConfig
    from .design_protocol import DesignStage
    from .designer_stage import DesignerStage
    from .policy import TokenPolicy
    from .regret import RegretEstimate


def with_operator(c: DesignedCandidate, operator: str, *, parent_id: str | None = None,
                  edit_kind: str | None = None) -> DesignedCandidate:
    return replace(c, operator=operator, parent_id=parent_id, edit_kind=edit_kind)


def operator_counts(designs: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per operator: designs, admitted, admission rate and mean reward of one iteration's
    ``designs`` records (``{"operator", "admitted", "reward", ...}``)."""
    out: dict[str, dict[str, Any]] = {}
    for op in sorted({d["operator"] for d in designs}):
        mine = [d for d in designs if d["operator"] == op]
        admitted = sum(1 for d in mine if d["admitted"])
        rewards = [d["reward"] for d in mine if d.get("reward") is not None]
        out[op] = {"designs": len(mine), "admitted": admitted, "admission_rate": admitted / len(mine),
                   "reward_mean": sum(rewards) / len(rewards) if rewards else None}
    return out


def record_designs(stage: DesignStage | None, candidates: Sequence[DesignedCandidate],
                   measured: dict[str, RegretEstimate], reward: RewardSettings, data: dict[str, Any]) -> None:
    """Record one iteration's designs by operator into ``data`` (a metrics line) and tell
    the stage's operator mix what each earned.

    ``data["designs"]``: per design its operator, edit kind, parent, admission, rejecting
    stage and base designer reward: the reward its admitted turn trains with
    (:func:`~.role_samples.measured_reward`, the hang penalty included), the invalid reward
    when it was not admitted or nothing was measured; ``data["operators"]``:
    :func:`operator_counts`; ``data["operator_mix"]``: the mix's cumulative summary, when the
    stage mixes operators.
    """
    from .role_samples import measured_reward

    invalid = reward.spec().invalid_reward
    designs = []
    for c in candidates:
        base = measured_reward(measured.get(c.env_id) if c.admitted and c.env_id else None, reward)
        earned = invalid if base is None else base
        designs.append({"operator": c.operator, "edit_kind": c.edit_kind,
                        "parent_id": c.parent_id, "admitted": bool(c.admitted),
                        "failed_stage": c.failed_stage, "reward": earned})
        if isinstance(stage, OperatorDesignStage):
            stage.feedback(c, reward=earned)
    data["designs"] = designs
    data["operators"] = operator_counts(designs)
    if isinstance(stage, OperatorDesignStage):
        data["operator_mix"] = stage.operator_summary()


class OperatorDesignStage:
    """:class:`~.design_protocol.DesignStage` mixing writing and editing (see the module docstring)."""

    def __init__(self, inner: DesignerStage, mix: OperatorMix) -> None:
        self.inner = inner
        self.mix = mix

    @property
    def designer(self) -> Designer:
        return self.inner.designer

    @property
    def hint_fallbacks(self) -> int:
        return self.inner.hint_fallbacks

    def design(
        self, skill: str, n: int, *, seed: int, agent_stats: dict[str, float] | None = None
    ) -> Sequence[DesignedCandidate]:
        from spade_designer.designer import NoParentError
        from spade_designer.operators import EDIT, WRITE
        from spade_designer.records import AgentStats

        from .designer_stage import candidate

        ops = self.mix.choose(n, random.Random(seed * 7919 + 1))
        n_edit = ops.count(EDIT)
        out: list[DesignedCandidate] = []
        if n_edit:
            stats = None
            if agent_stats:
                stats = AgentStats(win_rate=agent_stats.get("win_rate"), regret=agent_stats.get("regret"),
                                   episodes=int(agent_stats.get("envs", 0)))
            try:
                result = self.designer.edit_round(self.inner.domain, skill, n_edit, agent_stats=stats, seed=seed)
            except NoParentError:
                self.mix.fallbacks += n_edit
                n_edit = 0
            else:
                for c in result.candidates:
                    parent = c.memory_ids[0] if c.memory_ids else None
                    kind = "parameter" if (c.attempts and c.attempts[0].prefill) else None
                    meta = c.metadata
                    if meta is not None and meta.edit is not None:
                        kind = meta.edit.kind
                    out.append(with_operator(candidate(c, skill), EDIT, parent_id=parent, edit_kind=kind))
        if n - n_edit:
            written = self.inner.design(skill, n - n_edit, seed=seed, agent_stats=agent_stats)
            out = [with_operator(c, WRITE) for c in written] + out
        return out

    def feedback(self, c: DesignedCandidate, *, reward: float) -> None:
        """Tell the mix what a design earned (admission and designer reward)."""
        self.mix.update(c.operator, admitted=bool(c.admitted), reward=float(reward))

    def operator_summary(self) -> dict[str, Any]:
        return dict(self.mix.summary())

    def write_hint(self, source: str, *, seed: int) -> str:
        return str(self.inner.write_hint(source, seed=seed))

    def remember(self, env_id: str, *, win_rate: float, regret: float) -> None:
        self.inner.remember(env_id, win_rate=win_rate, regret=regret)

    def close(self) -> None:
        self.inner.close()


def build_operator_stage(
    policy: TokenPolicy, tokenizer: Any, config: SelfPlayConfig, spade_config: SpadeConfig, *, store: EnvStore,
    plugins: SpadePlugins,
) -> DesignerStage | OperatorDesignStage:
    """The run's design stage: the designer stage (:func:`~.designer_stage.build_designer_stage`,
    same arguments), wrapped in :class:`OperatorDesignStage` when ``[selfplay.designer.edit]
    share`` > 0 or ``mix = "bandit"`` (else unchanged)."""
    from spade_designer.operators import OperatorMix

    from .designer_stage import build_designer_stage

    stage = build_designer_stage(policy, tokenizer, config, spade_config, store=store, plugins=plugins)
    settings = stage.designer.config.edit
    if settings.share <= 0.0 and settings.mix == "fixed":
        return stage
    return OperatorDesignStage(stage, OperatorMix.from_settings(settings))
