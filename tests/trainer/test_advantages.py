"""Per-role advantages with shaping (issue 21): shaping only breaks ties, invalid candidates
never move or outrank a valid design, failed and hung plays cost the designer, not the agent."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from spade_core.plugins import get_plugins
from spade_trainer.config import load_selfplay_config
from spade_trainer.design_protocol import DesignedCandidate
from spade_trainer.regret import RegretEstimator, RegretMeasurement
from spade_trainer.rewards import bound_shaping
from spade_trainer.role_samples import agent_samples, designer_samples
from spade_trainer.rollout import Episode, EpisodeSpec, PlayableEnv
from spade_trainer.samples import PolicySample, Role, with_advantages

values = st.floats(-1.0, 1.0, allow_nan=False, allow_subnormal=False)
pairs = st.lists(st.tuples(values, st.floats(-0.5, 0.5, allow_nan=False, allow_subnormal=False)), min_size=1,
                 max_size=12)


@given(pairs)
def test_shaping_never_reverses_an_ordering_of_the_base(items: list[tuple[float, float]]) -> None:
    base, shaping = [b for b, _ in items], [s for _, s in items]
    shaped = bound_shaping(base, shaping)
    for i in range(len(base)):
        for j in range(len(base)):
            if base[i] > base[j]:
                assert shaped[i] >= shaped[j]  # never reversed (equal only where floats cannot tell)
            if base[i] == base[j] and shaping[i] > shaping[j]:
                assert shaped[i] >= shaped[j]  # ties follow the shaping


def test_shaping_breaks_ties_at_full_size_and_stays_under_half_a_gap() -> None:
    assert bound_shaping([0.0, 0.0], [0.1, 0.0]) == [0.1, 0.0]
    shaped = bound_shaping([0.0, 0.0, 0.02], [0.1, 0.0, 0.0])  # novelty 0.1 vs a real 0.02 gap
    assert shaped[1] < shaped[0] < shaped[2] and shaped[0] == pytest.approx(0.01)


def _designer(reward: float, *, valid: bool, shaping: float = 0.0, skill: str = "s") -> PolicySample:
    return PolicySample(Role.designer, [1], [2], [-1.0], reward, skill, shaping=shaping, valid=valid)


@given(st.lists(values, min_size=1, max_size=6), st.lists(st.floats(-0.5, 0.0), min_size=1, max_size=6),
       st.floats(0.5, 50.0))
def test_invalid_candidates_neither_move_nor_outrank_a_valid_design(valid: list[float], invalid: list[float],
                                                                    scale: float) -> None:
    alone = with_advantages([_designer(r, valid=True) for r in valid], designer_scale=scale)
    mixed = with_advantages([_designer(r, valid=True) for r in valid]
                            + [_designer(r, valid=False, shaping=r) for r in invalid], designer_scale=scale)
    assert [s.advantage for s in mixed[: len(valid)]] == pytest.approx([s.advantage for s in alone])
    assert max(s.advantage for s in mixed[len(valid):]) <= min(s.advantage for s in alone) + 1e-12


def test_the_issue_example_keeps_useless_valid_designs_below_the_baseline() -> None:
    # one plateau-only environment (0.6), two never solved (0), one invalid sibling (-0.45)
    out = with_advantages([_designer(0.6, valid=True), _designer(0.0, valid=True), _designer(0.0, valid=True),
                           _designer(-0.45, valid=False, shaping=-0.45)])
    adv = [s.advantage for s in out]
    assert adv[:3] == pytest.approx([0.4, -0.2, -0.2])
    assert adv[3] < adv[1]


def test_a_group_of_tied_returns_gets_advantages_of_the_shapings_size() -> None:
    eps = [PolicySample(Role.agent, [1], [2], [-1.0], 0.0 + w, "e", shaping=w) for w in (0.0, 0.1, 0.1, 0.05)]
    adv = [s.advantage for s in with_advantages(eps)]
    assert max(abs(a) for a in adv) <= 0.1
    assert adv[0] < adv[3] < adv[1] == adv[2]


def test_a_well_formed_episode_with_return_0_stays_below_one_with_return_0_05() -> None:
    eps = [PolicySample(Role.agent, [1], [2], [-1.0], 0.0 + 0.1, "e", shaping=0.1),
           PolicySample(Role.agent, [1], [2], [-1.0], 0.05, "e", shaping=0.0)]
    a, b = with_advantages(eps)
    assert a.advantage < b.advantage


# --- failed and hung plays --------------------------------------------------------------------


ENV = PlayableEnv("h-v1", "class HEnv: pass", "games", skill="logical_deduction", hint="a hint")


def _episode(hinted: bool, n: int, *, hung: bool = False) -> Episode:
    ep = Episode(EpisodeSpec(ENV, hinted, n), prompt_ids=[1], completion_ids=[2, 3], env_mask=[1, 1],
                 logprobs=[-1.0, -1.0], turns=1, done=True)
    if hung:
        ep.hung, ep.error = True, "SandboxTimeout: step() passed its deadline"
    else:
        ep.rewards, ep.terminated = [0.0], True
    return ep


def test_a_hanging_environment_costs_the_designer_and_not_the_agent() -> None:
    # 16 hinted and 16 unhinted plays returning 0, four of the unhinted hung
    episodes = [_episode(True, n) for n in range(16)] + [_episode(False, n, hung=n < 4) for n in range(16)]
    measurement = RegretMeasurement(RegretEstimator.summarise([ENV], episodes), episodes)
    (est,) = measurement.estimates
    assert est.regret == 0.0 and est.hung == 4  # the hangs raise no regret
    cfg, plugins, data = load_selfplay_config(preset="gpu"), get_plugins(), {}
    design = DesignedCandidate("logical_deduction", True, True, ENV.env_id, None, (), None, [1], [5], [-1.0])
    (designer,) = designer_samples([design], {ENV.env_id: est}, data, config=cfg, plugins=plugins)
    assert designer.reward == -0.5 and designer.valid
    agent = agent_samples(measurement, data, config=cfg, plugins=plugins)
    assert len(agent) == 12 and all(s.reward == 0.0 for s in agent)  # hung plays are not trained


def test_without_a_hang_penalty_the_design_is_rewarded_from_its_remaining_plays() -> None:
    cfg = load_selfplay_config(preset="gpu", overrides=['reward.designer_hang_penalty="from_plays"'])
    episodes = [_episode(True, n) for n in range(4)] + [_episode(False, n, hung=n == 0) for n in range(4)]
    (est,) = RegretEstimator.summarise([ENV], episodes)
    design = DesignedCandidate("logical_deduction", True, True, ENV.env_id, None, (), None, [1], [5], [-1.0])
    (designer,) = designer_samples([design], {ENV.env_id: est}, {}, config=cfg, plugins=get_plugins())
    assert designer.reward == 0.0  # regret 0, win rate 0: blend 0
