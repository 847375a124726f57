"""One iteration's training samples of both roles, with the rewards the recipe gives them.

:func:`designer_samples`: one sample per design turn, rewarded by what that turn produced
(the admitted turn earns the measured designer reward; every other turn its own failure,
trained only under ``reward.invalid_designs = "shape"``). :func:`agent_samples`: one sample
per usable episode, its return plus the bounded shaping terms. Both add their numbers to the
iteration's metrics line (``data``). The loop (:meth:`.selfplay.SelfPlayRun.reward`) calls
them with its configuration and plugins.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from spade_core.shaping import AgentRewardContext, DesignerRewardContext

from .rewards import designer_reward
from .samples import PolicySample, Role
from .shaping import agent_terms, designer_terms

if TYPE_CHECKING:
    from spade_core.plugins import SpadePlugins

    from .config import RewardSettings, SelfPlayConfig
    from .design_protocol import DesignedCandidate
    from .regret import RegretEstimate, RegretMeasurement


def win_rate_of(est: RegretEstimate, reward: RewardSettings) -> float:
    """The win rate the rewards read: the share of outright wins under ``reward.win_rate =
    "solve_rate"``, else the mean unhinted return."""
    return est.solve_rate if reward.win_rate == "solve_rate" else est.win_rate


def measured_reward(est: RegretEstimate | None, reward: RewardSettings) -> float | None:
    """Base reward of an admitted design from its plays, or ``None`` when nothing usable
    was measured (it is then credited as a design that did not pass)."""
    penalty = reward.designer_hang_penalty
    if est is None:
        return None
    if est.hung and penalty != "from_plays":
        return float(penalty)  # its environment hung: it costs the designer (and is retired)
    if not est.measured:
        return None
    return designer_reward(est.regret, win_rate_of(est, reward), reward.spec())


def designer_samples(candidates: Sequence[DesignedCandidate], by_id: dict[str, RegretEstimate], data: dict[str, Any],
                     *, config: SelfPlayConfig, plugins: SpadePlugins) -> list[PolicySample]:
    """One sample per design turn, rewarded by what that turn produced: the admitted turn
    earns the measured reward; every other turn (a broken first design before its repair, a
    candidate that never passed) earns its own failure, graded by its own stage and code, and
    is trained only under ``reward.invalid_designs = "shape"``."""
    rcfg = config.reward
    spec = rcfg.spec()
    shape = rcfg.invalid_designs == "shape"
    out: list[PolicySample] = []
    rewards, terms_total = [], Counter[str]()
    skipped = 0
    for c in candidates:
        est = by_id.get(c.env_id) if c.admitted and c.env_id else None
        earning = c.earning_turn()
        for n, t in enumerate(c.trained_turns()):
            base = measured_reward(est, rcfg) if n == earning else None
            valid = base is not None
            measured = valid and est is not None and est.measured
            ctx = DesignerRewardContext(
                env_id=c.env_id, domain=config.domain, skill=c.skill, valid=valid,
                base_reward=base if valid else spec.invalid_reward,
                regret=est.regret if measured and est is not None else None,
                win_rate=win_rate_of(est, rcfg) if measured and est is not None else None,
                novelty=t.novelty, failed_stage=None if valid else (t.failed_stage or c.failed_stage or "admission"),
                extra={"shaping": dict(rcfg.shaping), "code_structure": t.code_structure},
            )
            if not valid and not shape:
                skipped += 1  # rejection sampling: only valid designs are trained
                continue
            terms = designer_terms(plugins, ctx)
            terms_total.update(terms)
            shaping = sum(terms.values())
            reward = ctx.base_reward + shaping
            rewards.append(reward)
            # train_designer = false: rewarded and logged as usual, but nothing enters the update
            if t.trainable and config.train_designer:
                out.append(PolicySample(Role.designer, list(t.prompt_ids or []), list(t.completion_ids or []),
                                        list(t.logprobs or []), reward, c.skill, shaping=shaping, valid=valid))
    data["designer_reward_mean"] = sum(rewards) / len(rewards) if rewards else None
    data["designer_shaping"] = dict(terms_total)
    data["designer_turns_rejected"] = skipped
    data["designer_samples_trained"] = len(out)
    return out


def agent_samples(measurement: RegretMeasurement, data: dict[str, Any], *, config: SelfPlayConfig,
                  plugins: SpadePlugins) -> list[PolicySample]:
    """One sample per usable episode (unhinted ones only, unless ``train_on_hinted``): the
    episode's return plus the agent's shaping terms, grouped by environment (and condition)."""
    episodes = measurement.episodes if config.train_on_hinted else measurement.unhinted()
    out: list[PolicySample] = []
    returns = []
    terms_total = Counter[str]()
    for ep in episodes:
        if not ep.usable:
            continue  # the environment failed or hung: its bug, not the agent's doing
        ctx = AgentRewardContext(
            env_id=ep.spec.env.env_id, domain=ep.spec.env.domain, episode_return=ep.episode_return,
            turns=ep.turns, terminated=ep.terminated, hinted=ep.spec.hinted,
            extra={"shaping": dict(config.reward.shaping), "well_formed_turns": ep.well_formed_turns},
        )
        # shaping terms enter the training reward only, bounded to break ties
        # (samples.with_advantages): ep.episode_return (and the regret) keeps REFERENCE.md's definition
        terms = agent_terms(plugins, ctx)
        terms_total.update(terms)
        shaping = sum(terms.values())
        reward = ep.episode_return + shaping
        returns.append(reward)
        if ep.model_tokens == 0 or not ep.prompt_ids:
            continue  # the environment failed before the agent spoke: nothing to learn from
        group = ep.spec.env.env_id + ("/hinted" if ep.spec.hinted else "")
        out.append(PolicySample(Role.agent, ep.prompt_ids, ep.completion_ids, ep.logprobs, reward, group,
                                env_mask=ep.env_mask, shaping=shaping))
    data["agent_reward_mean"] = sum(returns) / len(returns) if returns else None
    data["agent_shaping"] = dict(terms_total)
    return out


__all__ = ["agent_samples", "designer_samples", "measured_reward", "win_rate_of"]
