"""Hook implementations of spade_sandbox (filled in as the package grows)."""
