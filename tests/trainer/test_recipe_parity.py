"""Recipe parity: for one recorded iteration (fixed returns, validity and skills) the `gpu`
preset's rewards and advantages are the reference recipe's, computed here term by term from
REFERENCE.md without the trainer's reward functions.

Reference terms: episode return = last reward clipped to [-1, 1] if terminated, else 0;
regret = mean of hinted returns - mean of unhinted returns, floored at 0; win rate = mean
unhinted return; designer reward = 0.4 * clip(regret / 0.15, 0, 1) + 0.6 * plateau(win rate),
plateau 1 on [0.4, 0.6], linear to 0 at 0.15 and 0.85; only valid designs are trained,
centred per skill (no std division), times env_reward_scale = min(50, actor samples /
designer samples x regeneration interval); agent advantages: GRPO per environment.
"""

from __future__ import annotations

import math

import pytest
from spade_trainer.config import load_selfplay_config
from spade_trainer.design_protocol import DesignedCandidate
from spade_trainer.regret import RegretEstimator, RegretMeasurement
from spade_trainer.role_samples import agent_samples, designer_samples
from spade_trainer.rollout import Episode, EpisodeSpec, PlayableEnv
from spade_trainer.samples import Role, with_advantages
from spade_trainer.selfplay import IterationRecord, SelfPlayRun

#: env id -> (skill, hinted (last reward, terminated) per play, unhinted ones); 4 plays each (gpu K)
RECORDED = {
    "a1-v1": ("logical_deduction", [(1.0, True)] * 4, [(1.0, True), (0.0, True), (0.0, True), (1.0, True)]),
    "a2-v1": ("logical_deduction", [(1.0, True), (1.0, True), (0.0, True), (1.0, True)], [(0.0, True)] * 4),
    "a3-v1": ("logical_deduction", [(0.5, True)] * 4, [(0.5, True), (0.5, False), (0.5, True), (0.25, True)]),
    "b1-v1": ("spatial_reasoning", [(1.0, True)] * 4, [(1.0, True)] * 4),
    "b2-v1": ("spatial_reasoning", [(0.8, True), (1.7, True), (0.0, False), (0.3, True)],
              [(0.2, True), (0.0, True), (-0.4, True), (0.3, True)]),
}
#: invalid candidates: (skill, failed stage)
INVALID = [("logical_deduction", "fuzz"), ("spatial_reasoning", "extract"), ("spatial_reasoning", "contract")]


def ref_return(last: float, terminated: bool) -> float:
    return min(1.0, max(-1.0, last)) if terminated else 0.0


def ref_plateau(p: float) -> float:
    if p <= 0.15 or p >= 0.85:
        return 0.0
    if p < 0.4:
        return (p - 0.15) / 0.25
    if p > 0.6:
        return (0.85 - p) / 0.25
    return 1.0


def ref_designer_reward(env: str) -> float:
    _, hinted, unhinted = RECORDED[env]
    h = [ref_return(*x) for x in hinted]
    u = [ref_return(*x) for x in unhinted]
    regret = max(0.0, sum(h) / len(h) - sum(u) / len(u))
    win = max(0.0, min(1.0, sum(u) / len(u)))
    return 0.4 * min(1.0, max(0.0, regret / 0.15)) + 0.6 * ref_plateau(win)


def _episodes() -> list[Episode]:
    out = []
    for env_id, (skill, hinted, unhinted) in RECORDED.items():
        env = PlayableEnv(env_id, "class XEnv: pass", "games", skill=skill, hint="a hint")
        for flag, plays in ((False, unhinted), (True, hinted)):
            for n, (last, terminated) in enumerate(plays):
                ep = Episode(EpisodeSpec(env, flag, n), prompt_ids=[1, 2], completion_ids=[3, 4], env_mask=[1, 1],
                             logprobs=[-1.0, -1.0], rewards=[last], turns=1, terminated=terminated,
                             truncated=not terminated, done=True)
                out.append(ep)
    return out


def _candidates() -> list[DesignedCandidate]:
    out = [DesignedCandidate(skill, True, True, env_id, None, ("static",), 0.5, [1], [10 + i], [-1.0])
           for i, (env_id, (skill, _, _)) in enumerate(RECORDED.items())]
    out += [DesignedCandidate(skill, False, False, None, stage, (), None, [1], [90 + i], [-1.0])
            for i, (skill, stage) in enumerate(INVALID)]
    return out


def test_the_gpu_preset_computes_the_reference_recipe_term_by_term() -> None:
    cfg = load_selfplay_config(preset="gpu")
    run = SelfPlayRun(cfg)
    episodes = _episodes()
    envs = [ep.spec.env for ep in episodes if ep.spec.seed == 0 and not ep.spec.hinted]
    measurement = RegretMeasurement(RegretEstimator.summarise(envs, episodes), episodes)
    by_id = {e.env_id: e for e in measurement.estimates}
    record = IterationRecord(1)
    samples = (designer_samples(_candidates(), by_id, record.data, config=cfg, plugins=run.plugins)
               + agent_samples(measurement, record.data, config=cfg, plugins=run.plugins))
    trained = with_advantages(samples, designer_scale=cfg.designer_reward_scale)

    # env_reward_scale: 6 environments x 4 unhinted plays per iteration / (2 skills x 4 designs), interval 1
    scale = min(50.0, (6 * 4) / (2 * 4) * 1)
    assert cfg.designer_reward_scale == scale == 3.0

    # designer: only the five valid designs are trained; centred per skill, times the scale
    designer = [s for s in trained if s.role is Role.designer]
    assert sorted(s.completion_ids[0] for s in designer) == [10, 11, 12, 13, 14]
    expected: dict[int, tuple[float, float]] = {}
    for skill in ("logical_deduction", "spatial_reasoning"):
        mine = [(i, env) for i, (env, (sk, _, _)) in enumerate(RECORDED.items()) if sk == skill]
        rewards = {i: ref_designer_reward(env) for i, env in mine}
        mean = sum(rewards.values()) / len(rewards)
        expected.update({10 + i: (r, (r - mean) * scale) for i, r in rewards.items()})
    for s in designer:
        reward, advantage = expected[s.completion_ids[0]]
        assert s.reward == pytest.approx(reward, abs=1e-12)
        assert s.advantage == pytest.approx(advantage, abs=1e-12)

    # agent: every unhinted play, return as defined, GRPO advantage per environment
    agent = [s for s in trained if s.role is Role.agent]
    assert len(agent) == 5 * 4
    for env_id, (_, _, unhinted) in RECORDED.items():
        returns = [ref_return(*x) for x in unhinted]
        mean = sum(returns) / len(returns)
        std = math.sqrt(sum((r - mean) ** 2 for r in returns) / len(returns))
        adv = [0.0] * len(returns) if std == 0 else [(r - mean) / (std + 1e-4) for r in returns]
        mine = [s for s in agent if s.group == env_id]
        assert [s.reward for s in mine] == pytest.approx(returns, abs=1e-12)
        assert [s.advantage for s in mine] == pytest.approx(adv, abs=1e-9)

    # the recorded iteration has signal in both roles (the example is not degenerate)
    assert any(abs(s.advantage) > 0.1 for s in designer) and any(abs(s.advantage) > 0.1 for s in agent)
