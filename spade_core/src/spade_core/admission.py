"""The contract of admission by validation: what ``spade import --status admitted`` asks.

Its own small module (no import of the importer or the plugin manager) so the hook that
answers it, ``spade_admission_validator``, can name the type without a cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from .metadata import EnvMetadata, ValidationReport

if TYPE_CHECKING:
    from .store import EnvStore

__all__ = ["AdmissionValidator"]


class AdmissionValidator(Protocol):
    """What ``spade import --status admitted`` asks to decide admission (spade-designer's
    validation pipeline answers ``spade_admission_validator``).

    ``validate(items, store)`` returns one report per ``(source, metadata)`` pair, in
    order, judged as if each passing item were admitted before the next (a later
    near-duplicate of an earlier passing item is rejected as its duplicate), against the
    store's *admitted* environments only: stored candidates never block anything.
    """

    def validate(self, items: Sequence[tuple[str, EnvMetadata]], store: EnvStore) -> list[ValidationReport]: ...

    def close(self) -> None: ...
