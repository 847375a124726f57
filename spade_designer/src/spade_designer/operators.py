"""Choosing the design operator per design: writing from scratch or editing a frontier parent.

Two ways to mix them (``EditSettings.mix``):

* ``fixed`` — each design is an edit with probability ``share``;
* ``bandit`` — UCB1 over the two operators on the score each design earned, ``admitted``
  (0 or 1) plus the designer reward the loop gave it: an operator that gets environments
  admitted and rewarded is chosen more. ``share`` is the prior: before an operator has
  ``warmup`` results, designs are drawn with the fixed share. Each operator keeps at
  least ``min_share`` of the draws so that neither stops being measured.

The loop reports every design's outcome with :meth:`OperatorMix.update`; :meth:`summary`
is what the metrics record.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

WRITE = "write"
EDIT = "edit"
OPERATORS = (WRITE, EDIT)


@dataclass
class _Arm:
    designs: int = 0
    admitted: int = 0
    reward: float = 0.0

    @property
    def score(self) -> float:
        return (self.admitted + self.reward) / self.designs if self.designs else 0.0


@dataclass
class OperatorMix:
    """Per-design choice between :data:`WRITE` and :data:`EDIT` (see the module docstring)."""

    share: float = 0.0
    mode: str = "fixed"
    min_share: float = 0.1
    warmup: int = 2
    arms: dict[str, _Arm] = field(default_factory=lambda: {op: _Arm() for op in OPERATORS})
    #: Edits that fell back to writing because there was no parent to edit.
    fallbacks: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.share <= 1.0:
            raise ValueError(f"share must be in [0, 1], got {self.share}")
        if self.mode not in ("fixed", "bandit"):
            raise ValueError(f"mix must be 'fixed' or 'bandit', got {self.mode!r}")

    @classmethod
    def from_settings(cls, settings: Any) -> OperatorMix:
        return cls(share=float(settings.share), mode=str(settings.mix), min_share=float(settings.min_share))

    def edit_probability(self) -> float:
        """The probability that the next design is an edit."""
        if self.mode == "fixed":
            return self.share
        if any(self.arms[op].designs < self.warmup for op in OPERATORS):
            p = self.share
        else:
            total = sum(a.designs for a in self.arms.values())
            ucb = {op: a.score + math.sqrt(2 * math.log(total) / a.designs) for op, a in self.arms.items()}
            p = 1.0 if ucb[EDIT] > ucb[WRITE] else 0.0 if ucb[EDIT] < ucb[WRITE] else 0.5
        return min(1.0 - self.min_share, max(self.min_share, p))

    def choose(self, n: int, rng: random.Random) -> list[str]:
        """Operators of ``n`` designs."""
        p = self.edit_probability()
        return [EDIT if rng.random() < p else WRITE for _ in range(n)]

    def update(self, operator: str, *, admitted: bool, reward: float) -> None:
        """Record the outcome of one design made with ``operator``."""
        if operator not in self.arms:
            raise ValueError(f"unknown operator {operator!r}; expected one of {OPERATORS}")
        arm = self.arms[operator]
        arm.designs += 1
        arm.admitted += int(bool(admitted))
        arm.reward += float(reward)

    def summary(self) -> dict[str, Any]:
        """Cumulative designs, admissions and mean reward per operator, and the current edit probability."""
        return {
            "mode": self.mode,
            "edit_probability": round(self.edit_probability(), 4),
            "fallbacks": self.fallbacks,
            **{op: {"designs": a.designs, "admitted": a.admitted,
                    "reward_mean": (a.reward / a.designs) if a.designs else None} for op, a in self.arms.items()},
        }
