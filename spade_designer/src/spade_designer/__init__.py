"""spade_designer."""
