"""Exception types of spade_trainer; every one is a :class:`~spade_core.errors.SpadeError`."""

from __future__ import annotations

from spade_core.errors import ConfigError, SpadeError

__all__ = ["CheckpointError", "ConfigError", "RewardError", "RolloutError", "TrainerError"]


class TrainerError(SpadeError):
    """Base class of trainer failures."""


class RewardError(TrainerError, ValueError):
    """Reward inputs are invalid (empty return lists, out-of-range rates, mismatched groups)."""


class RolloutError(TrainerError):
    """A rollout could not run (no environments, bad budgets, a policy returning garbage)."""


class CheckpointError(TrainerError):
    """A checkpoint is missing, incomplete or belongs to a different configuration."""
