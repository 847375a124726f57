"""An episode's return and what counts as a win: the one rule that self-play training, the
TRL adapter and evaluation all apply.

The reference recipe's return: the last step's reward, clipped to [-1, 1], when the
environment itself ended the episode; 0 when the turn or token budget cut it (stalling is
never rewarded) or when no step ran. A step that hung past the sandbox's deadline costs
:data:`HUNG_STEP_PENALTY` instead (training and the TRL adapter; evaluation scores a failed
episode 0 and counts it as an error). A win is a return of full reward. Held-out episodes
(an experiment's evaluation, the Task API's ``test`` split) are seeds from
:data:`HELD_OUT_SEED_BASE` upwards; training draws below it.

Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Callable

#: Return of an episode whose step hung past the sandbox deadline.
HUNG_STEP_PENALTY = -0.5
#: An episode whose return reaches this counts as a win (rewards are partial progress, 1.0 = success).
WIN_THRESHOLD = 1.0 - 1e-6
#: Held-out instances are seeds from here upwards; training draws below it.
HELD_OUT_SEED_BASE = 1_000_000_000


def episode_return(
    last_reward: float | None,
    terminated: bool,
    *,
    hung: bool = False,
    hang_penalty: float = HUNG_STEP_PENALTY,
    error: Callable[[str], Exception] = ValueError,
) -> float:
    """Return of one episode (see the module docstring). ``hung`` wins over everything (the
    step never came back). A non-finite reward or penalty raises ``error(message)``: each
    caller names the exception its own callers expect."""
    if hung:
        penalty = float(hang_penalty)
        if not math.isfinite(penalty):
            raise error(f"hang_penalty must be finite, got {hang_penalty!r}")
        return penalty
    if not terminated or last_reward is None:
        return 0.0
    value = float(last_reward)
    if not math.isfinite(value):
        raise error(f"the last reward must be finite, got {last_reward!r}")
    return min(1.0, max(-1.0, value))


def is_win(episode_return_value: float) -> bool:
    """An episode is won when its return reaches full reward."""
    return episode_return_value >= WIN_THRESHOLD


__all__ = ["HELD_OUT_SEED_BASE", "HUNG_STEP_PENALTY", "WIN_THRESHOLD", "episode_return", "is_win"]
