"""The learning experiment's settings (:class:`LearnSettings`), apart from the experiment
so that ``spade experiment learn``/``curriculum`` read their options' defaults from here
without importing the experiment: the defaults have this one home."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from .errors import ConfigError

GroupInstance = Literal["fresh", "shared"]
ControlMode = Literal["eval", "full", "none"]
Trainer = Literal["spade", "trl"]
#: How plots and tables name each trainer.
TRAINER_NAMES = {"spade": "spade GRPO", "trl": "TRL GRPOTrainer"}


@dataclass(frozen=True)
class LearnSettings:
    """One learning experiment (every field is a ``spade experiment learn`` option)."""

    seed: int = 0
    #: Policy updates of the trained run (and of its control).
    updates: int = 12
    eval_every: int = 4
    #: GRPO groups per update (each a set of plays of the rung).
    groups: int = 4
    #: Plays per group.
    group_size: int = 8
    #: ``fresh``: each play of a group is its own random instance (the reference resets every
    #: play without a seed); ``shared``: the plays of a group share one instance, so the group
    #: baseline compares replies, not instances.
    group_instance: GroupInstance = "fresh"
    eval_episodes: int = 96
    learning_rate: float = 2e-5
    temperature: float = 1.0
    #: Text every reply starts with (not trained); "" for none.
    prefill: str = "\\boxed{"
    cut_at_action: bool = True
    max_new_tokens: int = 16
    #: The rung's knobs.
    candidates: int = 3
    guesses: int = 2
    #: The learning-rate-0 control: ``eval`` evaluates the initial weights at every
    #: evaluation point with the trained curve's seeds (what the whole run at lr 0 measures,
    #: since AdamW at lr 0 leaves the weights bit for bit unchanged, which the tests check);
    #: ``full`` also plays and updates at lr 0 (twice the time); ``none`` skips it (the curve
    #: is then not a test).
    control: ControlMode = "eval"
    #: Who makes the trained curve's updates: ``spade`` (:class:`~.policy_update.GRPOUpdate`)
    #: or ``trl`` (TRL's ``GRPOTrainer`` with a rollout function that plays the rung; see
    #: :mod:`.experiment_trl`). The control and the constant are the same for both.
    trainer: Trainer = "spade"
    #: Where the model is trained and sampled: ``cpu`` or a CUDA device (``cuda``,
    #: ``cuda:1``). Always float32: AdamW on bfloat16 weights rounds most steps of size
    #: ~lr x 1 away, so the curve on a GPU is the same recipe, not a lower-precision one.
    device: str = "cpu"

    def __post_init__(self) -> None:
        check_device(self.device)
        if self.updates < 1 or self.eval_every < 1:
            raise ConfigError(f"updates ({self.updates}) and eval_every ({self.eval_every}) must be >= 1")
        if self.groups < 1 or self.group_size < 2:
            raise ConfigError(f"groups must be >= 1 and group_size >= 2, got {self.groups}, {self.group_size}")
        if self.group_instance not in ("fresh", "shared"):
            raise ConfigError(f"group_instance must be 'fresh' or 'shared', got {self.group_instance!r}")
        if self.control not in ("eval", "full", "none"):
            raise ConfigError(f"control must be 'eval', 'full' or 'none', got {self.control!r}")
        if self.trainer not in TRAINER_NAMES:
            raise ConfigError(f"trainer must be 'spade' or 'trl', got {self.trainer!r}")
        if self.eval_episodes < 1 or self.eval_episodes > 100_000:
            raise ConfigError(f"eval_episodes must be in [1, 100000], got {self.eval_episodes}")
        if not 0 <= self.learning_rate < 1:
            raise ConfigError(f"learning_rate must be in [0, 1), got {self.learning_rate}")
        if not 2 <= self.candidates <= 15 or not 1 <= self.guesses <= 4:
            raise ConfigError(f"candidates must be in [2, 15] and guesses in [1, 4], got {self.candidates}, {self.guesses}")


def check_device(device: str) -> None:
    """``cpu``, ``cuda`` or ``cuda:N``, else a :class:`ConfigError` naming the value."""
    if not re.fullmatch(r"cpu|cuda(:\d+)?", device):
        raise ConfigError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")


__all__ = ["TRAINER_NAMES", "ControlMode", "GroupInstance", "LearnSettings", "Trainer", "check_device"]
