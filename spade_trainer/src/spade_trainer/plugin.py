"""Hook implementations of spade_trainer (filled in as the package grows)."""
