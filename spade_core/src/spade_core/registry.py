"""Gymnasium registration (being implemented: see the store/registry work)."""

from __future__ import annotations


def register_on_import() -> None:
    """Register store and seed environments with Gymnasium (not yet implemented)."""
