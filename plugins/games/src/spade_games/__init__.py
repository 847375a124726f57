"""spade_games: the cognitive-games domain plugin of SPADE (skills, prompt spec, seed pool, fuzzing).

``spade_core`` is imported before any module of this package: importing it loads every
installed plugin, this one included, so it must be fully importable by the time the
first ``spade_games`` submodule starts importing ``spade_core`` pieces. Importing it here
first makes every import order safe (``import spade_games.catalog`` as well as
``import spade_core``).
"""

import spade_core  # noqa: F401  (must come first: see the module docstring)

from .catalog import SKILLS, seed_envs
from .plugin import GARBAGE_ACTIONS, games_domain

__all__ = ["GARBAGE_ACTIONS", "SKILLS", "games_domain", "seed_envs"]
