"""Hook implementations of spade_designer (filled in as the package grows)."""
