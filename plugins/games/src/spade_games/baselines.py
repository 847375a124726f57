"""A blind baseline player: it knows a game's command vocabulary but not its hidden state.

It plays moves harvested from the winning replays of *other* seeds of the same game, so
every move is well-formed and plausible, but none uses what this episode's observations
reveal. Its win rate and mean return measure how far a game can be won by guessing;
the seed pool keeps both low, so any return above them is earned by reasoning.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from spade_core.domains import SeedEnv
from spade_core.env import ReferenceEnvAdapter
from spade_core.source import load_trusted_class

#: Seeds whose solutions supply the vocabulary; episodes are played on seeds below them.
VOCABULARY_SEEDS = range(10_000, 10_100)


@dataclass(frozen=True)
class BlindScore:
    """How a blind player fared on one game over ``episodes`` episodes."""

    game: str
    episodes: int
    win_rate: float
    mean_return: float


def vocabulary(env: Any, seeds: range = VOCABULARY_SEEDS) -> list[str]:
    """Every distinct action of the winning replays for ``seeds`` (sorted, for reproducibility)."""
    moves: set[str] = set()
    for seed in seeds:
        env.reset(seed=seed)
        solution = env.solution()
        if isinstance(solution, list):
            moves.update(solution)
    return sorted(moves)


def blind_score(seed_env: SeedEnv, episodes: int = 100, *, rng_seed: int = 0) -> BlindScore:
    """Play ``episodes`` blind episodes (seeds 0..episodes-1) of a seed game, in-process.

    Episode return follows the reference: the last step's reward if the episode
    terminated, else 0.
    """
    if episodes < 1 or episodes > VOCABULARY_SEEDS.start:
        raise ValueError(f"episodes must be in [1, {VOCABULARY_SEEDS.start}], got {episodes}")
    cls = load_trusted_class(seed_env.source(), seed_env.class_name, source_name=str(seed_env.path))
    env = ReferenceEnvAdapter(cls(), max_turns=seed_env.max_turns)
    moves = vocabulary(env)
    rng = random.Random(rng_seed)
    wins, total = 0, 0.0
    for seed in range(episodes):
        env.reset(seed=seed)
        reward, terminated, truncated = 0.0, False, False
        while not (terminated or truncated):
            _, reward, terminated, truncated, _ = env.step(rng.choice(moves))
        if terminated:
            total += reward
            wins += reward >= 1.0
    env.close()
    return BlindScore(seed_env.name, episodes, wins / episodes, total / episodes)
