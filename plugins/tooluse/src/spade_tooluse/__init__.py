"""spade_tooluse."""
