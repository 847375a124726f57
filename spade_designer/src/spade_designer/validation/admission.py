"""The validation pipeline as the importer's admission check (``spade import --status
admitted``; the ``spade_admission_validator`` hook).

Imported items are judged as designer candidates are, with two rules of their own:

* novelty compares an item with the store's *admitted* environments only (and with the
  batch's earlier passing items): two near-duplicates imported as candidates must not
  block each other's admission forever; of the two, the first to pass wins and the other
  is reported as its duplicate;
* a small import validates in this process (starting validator processes costs seconds),
  a large one in ``batch_processes`` validator processes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spade_core.config import SpadeConfig
    from spade_core.store import EnvStore
    from spade_sandbox.launcher import SandboxLauncher

from spade_core.metadata import EnvMetadata, EnvStatus, ValidationReport

from .config import ValidationConfig
from .pipeline import ValidationRequest, Validator

#: Imports up to this many items validate in threads of this process.
SMALL_IMPORT = 8


class AdmittedView:
    """The admitted environments of a store, as the novelty index reads a store."""

    def __init__(self, store: EnvStore) -> None:
        self._store = store
        self.url = f"{getattr(store, 'url', '')}#admitted"

    def count(self) -> int:
        return int(self._store.count(status=EnvStatus.admitted))

    def find(self) -> list[EnvMetadata]:
        return list(self._store.find(status=EnvStatus.admitted))

    def get_source(self, env_id: str) -> str:
        return str(self._store.get_source(env_id))


class PipelineAdmission:
    """An ``spade_core.admission.AdmissionValidator`` over :class:`Validator`."""

    def __init__(
        self, config: ValidationConfig | None = None, validator: Validator | None = None, launcher: SandboxLauncher | None = None
    ) -> None:
        self.validator = validator or Validator(config=config, launcher=launcher)
        self._views: dict[int, AdmittedView] = {}

    def validate(self, items: Sequence[tuple[str, EnvMetadata]], store: EnvStore) -> list[ValidationReport]:
        view = self._views.setdefault(id(store), AdmittedView(store))
        requests = [ValidationRequest(source, metadata) for source, metadata in items]
        width = 1 if len(requests) <= SMALL_IMPORT else None
        return self.validator.validate_many(requests, store=view, max_workers=width)

    def close(self) -> None:
        self.validator.close()


def admission_validator(spade_config: SpadeConfig) -> PipelineAdmission:
    """The admission check for a ``SpadeConfig`` (its ``[validation]`` and ``[spade.sandbox]`` tables)."""
    from spade_sandbox.launcher import SandboxLauncher

    config = ValidationConfig.from_section(spade_config.section("validation"))
    return PipelineAdmission(config, launcher=SandboxLauncher.from_config(spade_config))
