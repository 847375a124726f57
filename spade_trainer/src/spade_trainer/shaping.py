"""Reward shaping through the plugin hooks, and SPADE's built-in shaping plugin.

:func:`designer_terms` / :func:`agent_terms` call ``spade_designer_reward_terms`` /
``spade_agent_reward_terms`` on every loaded plugin and merge the named terms. This module
is itself a plugin (entry point ``trainer-shaping``): it adds a graded invalid-environment
penalty and a novelty bonus for designers, and a well-formed-action term for agents, with
weights taken from ``context.extra["shaping"]`` (the self-play config passes them) or the
defaults below.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spade_core.plugins import SpadePlugins

from spade_core.errors import PluginError
from spade_core.hookspecs import hookimpl
from spade_core.shaping import AgentRewardContext, DesignerRewardContext

from .shaping_signals import design_progress

DEFAULT_INVALID_PENALTY = 0.5
DEFAULT_NOVELTY_WEIGHT = 0.1
DEFAULT_WELL_FORMED_WEIGHT = 0.1


def _merge(results: list[dict[str, float] | None], hook: str) -> dict[str, float]:
    terms: dict[str, float] = {}
    for res in results:
        if res is None:
            continue
        if not isinstance(res, dict):
            raise PluginError(f"{hook} must return dict[str, float] or None, got {type(res).__name__}")
        for name, value in res.items():
            v = float(value)
            if not math.isfinite(v):
                raise PluginError(f"{hook} returned non-finite term {name!r}={value!r}")
            terms[name] = terms.get(name, 0.0) + v
    return terms


def designer_terms(plugins: SpadePlugins, context: DesignerRewardContext) -> dict[str, float]:
    """Named shaping terms of every plugin for one designed environment."""
    return _merge(plugins.pm.hook.spade_designer_reward_terms(context=context), "spade_designer_reward_terms")


def agent_terms(plugins: SpadePlugins, context: AgentRewardContext) -> dict[str, float]:
    """Named shaping terms of every plugin for one agent episode."""
    return _merge(plugins.pm.hook.spade_agent_reward_terms(context=context), "spade_agent_reward_terms")


def _weight(context: DesignerRewardContext | AgentRewardContext, key: str, default: float) -> float:
    shaping = context.extra.get("shaping") or {}
    return float(shaping.get(key, default))


@hookimpl
def spade_designer_reward_terms(context: DesignerRewardContext) -> dict[str, float] | None:
    """Built-in terms.

    ``invalid_env``: a candidate that did not pass validation is penalised by
    ``invalid_penalty * (1 - progress)``, where progress (:func:`.shaping_signals.design_progress`)
    grades how far it got — a candidate rejected by a later stage is penalised less than one
    rejected at extraction, and within extraction truncated code less than no code
    (``context.extra["code_structure"]``). The penalty is always in
    ``[-invalid_penalty, 0)``, so any invalid candidate still scores below a valid one.

    ``novelty``: a valid candidate earns ``novelty_weight * novelty``, the validator's
    novelty score in [0, 1] (1 - similarity to the nearest stored environment).
    """
    terms: dict[str, float] = {}
    if not context.valid:
        structure = float(context.extra.get("code_structure") or 0.0)
        # no stage named: nothing says how far it got, so the full penalty
        progress = min(design_progress(context.failed_stage, structure), 0.999) if context.failed_stage else 0.0
        terms["invalid_env"] = -_weight(context, "invalid_penalty", DEFAULT_INVALID_PENALTY) * (1.0 - progress)
    elif context.novelty is not None:
        terms["novelty"] = _weight(context, "novelty_weight", DEFAULT_NOVELTY_WEIGHT) * max(
            0.0, min(1.0, float(context.novelty))
        )
    return terms or None


@hookimpl
def spade_agent_reward_terms(context: AgentRewardContext) -> dict[str, float] | None:
    """Built-in term ``well_formed``: ``well_formed_weight`` times the fraction of the
    episode's turns whose message carried an action in the domain's format
    (``context.extra["well_formed_turns"]``). A dense signal for a policy that wins no
    game yet; it is added to the agent's training reward only — the episode return (and
    so the regret) is unchanged."""
    count = context.extra.get("well_formed_turns")
    if count is None or context.turns <= 0:
        return None
    weight = _weight(context, "well_formed_weight", DEFAULT_WELL_FORMED_WEIGHT)
    return {"well_formed": weight * min(1.0, max(0.0, float(count) / context.turns))}
