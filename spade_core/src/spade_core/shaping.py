"""Inputs of the reward-shaping hooks (kept in core so plugins need only spade_core)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class DesignerRewardContext:
    """What is known about one designed environment when its designer reward is computed."""

    env_id: str | None
    domain: str
    skill: str
    valid: bool
    base_reward: float
    regret: float | None = None
    win_rate: float | None = None
    novelty: float | None = None
    failed_stage: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AgentRewardContext:
    """One finished agent episode."""

    env_id: str
    domain: str
    episode_return: float
    turns: int
    terminated: bool
    hinted: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
