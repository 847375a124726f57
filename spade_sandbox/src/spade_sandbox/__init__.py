"""spade_sandbox."""
