"""Adaptive difficulty by a fixed rule: the fixed-pool baseline in the spirit of RLVE.

RLVE (adaptive verifiable environments), as we read its paper, keeps per environment a
window of difficulty levels ``[lo, hi]`` of a procedural generator; each problem is drawn at
a level chosen uniformly from the window; the agent's accuracy is tracked at the top level ``hi``, and once
``min_attempts`` problems there were played, an accuracy of at least ``raise_at`` moves the
top up one level (the bottom follows, so the window is at most ``window`` levels wide).
Every check starts the counts again, move or not, so each decision rests on fresh plays
(its released code does so: accuracy over all plays since the last move would let early
failures hold a learning agent back for good; our first version did that, and the window
of a real run never moved). Its problems start at difficulty 0, the bottom of the ladder.
No designer and no LLM: the rule sees only measured success.

This class adds one thing the issue asks for beyond that reading: an accuracy at the top of
at most ``lower_at`` moves the top back down one level (never below the bottom of the ladder), so a
top the agent cannot reach yet does not take a share of every update. Both thresholds, the
window and the attempts needed are fields. The ladder itself (which knob settings are level 0, 1, ...) belongs to the caller.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError


@dataclass
class AdaptiveDifficulty:
    """The window of one environment over ``levels`` levels (0 the easiest)."""

    levels: int
    start: int = 0
    window: int = 4
    raise_at: float = 0.9
    lower_at: float = 0.1
    min_attempts: int = 16
    lo: int = field(init=False)
    hi: int = field(init=False)
    attempts: int = field(default=0, init=False)
    wins: int = field(default=0, init=False)
    #: Every move: ``{"after": n_records, "from": hi, "to": hi', "accuracy": x}``.
    moves: list[dict[str, Any]] = field(default_factory=list, init=False)
    _records: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.levels < 1 or not 0 <= self.start < self.levels:
            raise ConfigError(f"adaptive difficulty: start {self.start} is not one of {self.levels} levels")
        if self.window < 1 or self.min_attempts < 1:
            raise ConfigError(f"adaptive difficulty: window ({self.window}) and min_attempts ({self.min_attempts}) "
                              "must be >= 1")
        if not 0 <= self.lower_at < self.raise_at <= 1:
            raise ConfigError(f"adaptive difficulty: need 0 <= lower_at < raise_at <= 1, got {self.lower_at}, "
                              f"{self.raise_at}")
        self.lo = self.hi = self.start

    def sample(self, rng: random.Random) -> int:
        """A level drawn uniformly from the window."""
        return rng.randint(self.lo, self.hi)

    def record(self, level: int, won: bool) -> None:
        """One played problem; only those at the window's top count towards a move."""
        self._records += 1
        if level == self.hi:
            self.attempts += 1
            self.wins += bool(won)

    def update(self) -> int:
        """Apply the rule once (call it after each batch of :meth:`record`); the move made:
        +1, -1 or 0."""
        if self.attempts < self.min_attempts:
            return 0
        accuracy = self.wins / self.attempts
        self.attempts = self.wins = 0  # every check rests on fresh plays, move or not
        step = 0
        if accuracy >= self.raise_at and self.hi < self.levels - 1:
            step = 1
        elif accuracy <= self.lower_at and self.hi > 0:
            step = -1
        if step:
            self.moves.append({"after": self._records, "from": self.hi, "to": self.hi + step,
                               "accuracy": round(accuracy, 4)})
            self.hi += step
            self.lo = min(self.hi, max(self.lo, self.hi - self.window + 1))
        return step

    def state(self) -> dict[str, Any]:
        return {"lo": self.lo, "hi": self.hi, "attempts_at_top": self.attempts, "wins_at_top": self.wins}


__all__ = ["AdaptiveDifficulty"]
