"""Reward shaping through the plugin hooks, and the built-in shaping plugin."""

from __future__ import annotations

import math

import pytest
from spade_core.errors import PluginError
from spade_core.hookspecs import hookimpl
from spade_core.plugins import SpadePlugins
from spade_core.shaping import AgentRewardContext, DesignerRewardContext
from spade_trainer.shaping import agent_terms, designer_terms


def _ctx(**kw: object) -> DesignerRewardContext:
    base = dict(env_id="e-v1", domain="games", skill="s", valid=True, base_reward=0.3)
    base.update(kw)
    return DesignerRewardContext(**base)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def plugins() -> SpadePlugins:
    return SpadePlugins(only=["trainer-shaping"])


def test_builtin_plugin_is_registered_through_the_entry_point(plugins: SpadePlugins) -> None:
    assert "trainer-shaping" in {i.name for i in plugins.infos}


def test_an_invalid_environment_is_penalised(plugins: SpadePlugins) -> None:
    # graded by how far it got: rejected at "contract", 4 of the 12 gates passed
    assert designer_terms(plugins, _ctx(valid=False, failed_stage="contract")) == {
        "invalid_env": pytest.approx(-0.5 * (1 - 4 / 12))
    }
    assert designer_terms(plugins, _ctx(valid=False)) == {"invalid_env": -0.5}  # no stage: full penalty


def test_a_novel_valid_environment_earns_a_bonus(plugins: SpadePlugins) -> None:
    assert designer_terms(plugins, _ctx(novelty=0.5)) == {"novelty": pytest.approx(0.05)}


def test_weights_come_from_the_context(plugins: SpadePlugins) -> None:
    ctx = _ctx(valid=False, extra={"shaping": {"invalid_penalty": 2.0}})
    assert designer_terms(plugins, ctx) == {"invalid_env": -2.0}


def test_a_plain_valid_environment_gets_no_terms(plugins: SpadePlugins) -> None:
    assert designer_terms(plugins, _ctx()) == {}


class _ThirdParty:
    @hookimpl
    def spade_designer_reward_terms(self, context: DesignerRewardContext) -> dict[str, float]:
        return {"length": -0.1}

    @hookimpl
    def spade_agent_reward_terms(self, context: AgentRewardContext) -> dict[str, float]:
        return {"brevity": 0.01 * (10 - context.turns)}


def test_third_party_terms_are_merged_by_name() -> None:
    p = SpadePlugins(only=["trainer-shaping"])
    p.register(_ThirdParty(), name="third")
    assert designer_terms(p, _ctx(valid=False)) == {"invalid_env": -0.5, "length": -0.1}
    ctx = AgentRewardContext(env_id="e", domain="games", episode_return=1.0, turns=4, terminated=True)
    assert agent_terms(p, ctx) == {"brevity": pytest.approx(0.06)}


class _Broken:
    @hookimpl
    def spade_designer_reward_terms(self, context: DesignerRewardContext) -> dict[str, float]:
        return {"nan": math.nan}


def test_a_non_finite_term_is_refused_with_its_name() -> None:
    p = SpadePlugins(only=[])
    p.register(_Broken(), name="broken")
    with pytest.raises(PluginError, match="'nan'"):
        designer_terms(p, _ctx())
