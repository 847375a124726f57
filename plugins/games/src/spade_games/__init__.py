"""spade_games: the cognitive-games domain plugin of SPADE (skills, prompt spec, seed pool, fuzzing)."""

from .catalog import SKILLS, seed_envs
from .plugin import GARBAGE_ACTIONS, games_domain

__all__ = ["GARBAGE_ACTIONS", "SKILLS", "games_domain", "seed_envs"]
