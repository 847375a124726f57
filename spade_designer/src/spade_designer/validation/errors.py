"""Errors of the validation package (all :class:`spade_core.errors.SpadeError`)."""

from __future__ import annotations

from spade_core.errors import SpadeError


class ValidationInputError(SpadeError, ValueError):
    """The caller asked for something the pipeline cannot do (not a verdict on the
    environment): a non-str source, an unknown domain, a missing file or id."""
