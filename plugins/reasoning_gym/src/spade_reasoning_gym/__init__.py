"""Reasoning-Gym's procedural tasks as SPADE evaluation suites (``spade eval --suite reasoning_gym``)."""

from .suite import GROUPS, ReasoningGymEnv, reasoning_gym_items

__all__ = ["GROUPS", "ReasoningGymEnv", "reasoning_gym_items"]
