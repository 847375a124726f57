"""Seed tool-use environments (one source file each; loaded as environment source, not imported)."""
