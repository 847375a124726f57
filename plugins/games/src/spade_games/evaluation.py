"""The ``seed_pool`` evaluation suite: any player on the fixed pool of seed games.

A *player* is made fresh for each episode by ``player_factory()``; it is called with each
observation and returns the action text (so a chat agent keeps its own history). The
episode return follows the reference: the last step's reward if the episode terminated,
else 0. Episodes use seeds from ``first_seed`` upward, far from the seeds the tests and
the blind player's vocabulary use, so results are not tuned to them.

Without a player the suite reports the pool's reference band instead: the blind player's
floor and the observation-only expert's ceiling for each game.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from spade_core.domains import SeedEnv
from spade_core.env import ReferenceEnvAdapter
from spade_core.errors import SpadeError
from spade_core.source import load_trusted_class

from .baselines import blind_score
from .catalog import seed_envs
from .experts import EXPERTS, play_expert

Player = Callable[[str], str]
PlayerFactory = Callable[[], Player]

FIRST_SEED = 1_000_000


class EvaluationError(SpadeError, ValueError):
    """The evaluation was asked for something it cannot do (unknown game, bad count)."""


def _select(games: Sequence[str] | None) -> list[SeedEnv]:
    pool = list(seed_envs())
    if games is None:
        return pool
    known = {s.name: s for s in pool}
    unknown = [g for g in games if g not in known]
    if unknown:
        raise EvaluationError(f"unknown seed game(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return [known[g] for g in games]


def play_episode(seed_env: SeedEnv, player: Player, seed: int) -> tuple[float, int]:
    """One episode of ``seed_env``: (episode return, turns taken)."""
    cls = load_trusted_class(seed_env.source(), seed_env.class_name, source_name=str(seed_env.path))
    env = ReferenceEnvAdapter(cls(), max_turns=seed_env.max_turns)
    obs, _ = env.reset(seed=seed)
    turns, reward, terminated, truncated = 0, 0.0, False, False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, _ = env.step(player(obs))
        turns += 1
    env.close()
    return (reward if terminated else 0.0), turns


def evaluate(
    player_factory: PlayerFactory | None = None,
    *,
    episodes: int = 5,
    games: Sequence[str] | None = None,
    first_seed: int = FIRST_SEED,
) -> dict[str, Any]:
    """Mean return, win rate and turns per game and per skill (JSON-serialisable).

    With ``player_factory=None``, each game reports ``blind_return`` and ``expert_win_rate``
    (``None`` for a game without an expert) instead.
    """
    if episodes < 1:
        raise EvaluationError(f"episodes must be at least 1, got {episodes}")
    selected = _select(games)
    per_game: dict[str, dict[str, Any]] = {}
    for seed_env in selected:
        if player_factory is None:
            blind = blind_score(seed_env, episodes)
            expert = (
                [play_expert(seed_env, first_seed + i) for i in range(episodes)] if seed_env.name in EXPERTS else []
            )
            per_game[seed_env.name] = {
                "skill": seed_env.skill,
                "blind_return": blind.mean_return,
                "expert_win_rate": sum(r.won for r in expert) / len(expert) if expert else None,
            }
            continue
        results = [play_episode(seed_env, player_factory(), first_seed + i) for i in range(episodes)]
        returns = [r for r, _ in results]
        per_game[seed_env.name] = {
            "skill": seed_env.skill,
            "mean_return": statistics.fmean(returns),
            "win_rate": sum(r >= 1.0 for r in returns) / episodes,
            "mean_turns": statistics.fmean(t for _, t in results),
        }
    key = "blind_return" if player_factory is None else "mean_return"
    skills: dict[str, float] = {}
    for skill in sorted({g["skill"] for g in per_game.values()}):
        skills[skill] = statistics.fmean(g[key] for g in per_game.values() if g["skill"] == skill)
    return {
        "suite": "seed_pool",
        "episodes_per_game": episodes,
        "first_seed": first_seed,
        "games": per_game,
        "skills": skills,
        "overall": statistics.fmean(g[key] for g in per_game.values()),
    }
