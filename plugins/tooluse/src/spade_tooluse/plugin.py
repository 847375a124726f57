"""Hook implementations of spade_tooluse (filled in as the package grows)."""
