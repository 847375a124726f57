"""Reward shaping through the plugin hooks, and SPADE's built-in shaping plugin.

:func:`designer_terms` / :func:`agent_terms` call ``spade_designer_reward_terms`` /
``spade_agent_reward_terms`` on every loaded plugin and merge the named terms. This module
is itself a plugin (entry point ``trainer-shaping``): it adds an invalid-environment
penalty and a novelty bonus, with weights taken from ``context.extra["shaping"]`` (the
self-play config passes them) or the defaults below.
"""

from __future__ import annotations

import math
from typing import Any

from spade_core.errors import PluginError
from spade_core.hookspecs import hookimpl
from spade_core.shaping import AgentRewardContext, DesignerRewardContext

DEFAULT_INVALID_PENALTY = 0.5
DEFAULT_NOVELTY_WEIGHT = 0.1


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


def designer_terms(plugins: Any, context: DesignerRewardContext) -> dict[str, float]:
    """Named shaping terms of every plugin for one designed environment."""
    return _merge(plugins.pm.hook.spade_designer_reward_terms(context=context), "spade_designer_reward_terms")


def agent_terms(plugins: Any, context: AgentRewardContext) -> dict[str, float]:
    """Named shaping terms of every plugin for one agent episode."""
    return _merge(plugins.pm.hook.spade_agent_reward_terms(context=context), "spade_agent_reward_terms")


def _weight(context: DesignerRewardContext, key: str, default: float) -> float:
    shaping = context.extra.get("shaping") or {}
    return float(shaping.get(key, default))


@hookimpl
def spade_designer_reward_terms(context: DesignerRewardContext) -> dict[str, float] | None:
    """Built-in terms: ``invalid_env`` (a candidate that failed validation is penalised, so
    the designer learns to write working code) and ``novelty`` (bonus proportional to the
    validator's novelty score in [0, 1])."""
    terms: dict[str, float] = {}
    if not context.valid:
        terms["invalid_env"] = -_weight(context, "invalid_penalty", DEFAULT_INVALID_PENALTY)
    elif context.novelty is not None:
        terms["novelty"] = _weight(context, "novelty_weight", DEFAULT_NOVELTY_WEIGHT) * max(
            0.0, min(1.0, float(context.novelty))
        )
    return terms or None
