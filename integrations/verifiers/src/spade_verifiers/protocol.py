"""What ``spade eval`` does to a registry environment's episode, restated without SPADE.

This distribution cannot import SPADE (see README.md: verifiers 0.4 and SPADE's server
cannot share one Python environment), so the few rules an episode follows are restated
here, each naming its source, and ``tests/integrations/test_verifiers.py`` checks them
against SPADE's own (it loads this file by path, without verifiers):

* the system prompt of every conversation (``spade_core.app.eval_harness.SYSTEM_PROMPT``);
* which episodes a run plays (``spade_eval.suites.registry_items``): for each environment
  id in the order given, ``size`` episodes with seeds ``seed, seed + 1, ...``;
* an episode's turn cap (``spade_core.app.eval_harness.evaluate``): the environment's own
  ``max_turns``, lowered to the caller's ``max_turns`` when that is smaller;
* an episode's return and what a success is (``spade_core.returns``): the last step's
  reward clipped to [-1, 1] when the environment ended the episode (terminated), else 0;
  a success is a return of 1.

Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

#: ``spade_core.app.eval_harness.SYSTEM_PROMPT``, the first message of every conversation.
SYSTEM_PROMPT = (
    "You act in a text environment. Each turn, read the observation and reply with one action in the "
    "format the observation asks for (for example \\boxed{...}). Keep your reply short."
)
#: ``spade_core.returns.WIN_THRESHOLD``: a return at or above it is a success.
WIN_THRESHOLD = 1.0 - 1e-6
#: ``spade eval``'s default reply budget per turn (``--max-new-tokens``) and temperature.
DEFAULT_MAX_TOKENS = 256
DEFAULT_TEMPERATURE = 0.0
DEFAULT_TOP_P = 1.0


def episode_return(last_reward: float | None, terminated: bool) -> float:
    """``spade_core.returns.episode_return`` as evaluation applies it: a failed step or a
    non-finite reward scores 0 (``spade eval`` records the error beside it)."""
    if not terminated or last_reward is None:
        return 0.0
    value = float(last_reward)
    if not math.isfinite(value):
        return 0.0
    return min(1.0, max(-1.0, value))


def is_win(episode_return_value: float) -> bool:
    """``spade_core.returns.is_win``: an episode is won when its return reaches 1."""
    return episode_return_value >= WIN_THRESHOLD


def turn_cap(env_max_turns: int | None, max_turns: int | None) -> int | None:
    """The turns an episode may take: the environment's own cap, lowered to ``max_turns``
    (``None`` where neither is known: the server's own truncation then ends it)."""
    caps = [c for c in (env_max_turns, max_turns) if c is not None]
    return min(caps) if caps else None


def episode_seeds(ids: Iterable[str], size: int, seed: int) -> Iterator[tuple[str, int]]:
    """``(environment id, seed)`` of each episode, in ``spade eval --suite registry``'s order."""
    if size < 1:
        raise ValueError(f"size must be at least 1, got {size}")
    for env_id in ids:
        for k in range(size):
            yield env_id, seed + k


def parse_ids(ids: str | Iterable[str] | None) -> list[str]:
    """Environment ids from a list or from one string, each comma- or space-separated (as
    ``spade eval -o ids=a,b`` takes them; a command line may hand over either)."""
    if ids is None:
        return []
    if isinstance(ids, str):
        ids = [ids]
    return [i for item in ids for i in str(item).replace(",", " ").split() if i]


__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TEMPERATURE",
    "DEFAULT_TOP_P",
    "SYSTEM_PROMPT",
    "WIN_THRESHOLD",
    "episode_return",
    "episode_seeds",
    "is_win",
    "parse_ids",
    "turn_cap",
]
