"""Hook implementations of spade_games (filled in as the package grows)."""
