"""pytest plugin of spade_designer: fixtures for fuzzing a plugin's environments."""
