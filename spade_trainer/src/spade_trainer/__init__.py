"""spade_trainer."""
