"""The version of spade-core (the same as ``pyproject.toml``'s), in a module of its own so
that modules on the import path (:mod:`spade_core.seed_index`) read it without importing the
``spade_core`` package back while it is still being imported."""

__version__ = "0.1.0"
