"""spade_games."""
