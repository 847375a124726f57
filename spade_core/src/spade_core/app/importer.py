r"""Importing environment pools into a store: each item read (:mod:`.import_sources`: files,
folders, JSONL and Parquet), prepared (:mod:`.import_rows`: validated into a store-ready
``(source, EnvMetadata)`` pair, the status a row's own record gives it decided in one place),
then stored here (:func:`import_items`: per-item outcomes, idempotent, batched writes,
optionally through an admission validator).

This module is the import's public surface: what the other two offer callers is
re-exported here (``read_items``, ``prepare``, ``ImportOptions``, ``RawItem``...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..admission import AdmissionValidator
from ..errors import EnvNotFound, InvalidTransition, SpadeError, StoreError
from ..metadata import EnvMetadata, ValidationReport
from .import_rows import ImportOptions, ItemError, PreparedItem, name_from_class, prepare, sanitize_name
from .import_sources import RawItem, read_items

if TYPE_CHECKING:
    from ..store import EnvStore

__all__ = [
    "ImportOptions", "ImportOutcome", "ImportReport", "ItemError", "PreparedItem", "RawItem", "import_items",
    "name_from_class", "prepare", "read_items", "sanitize_name",
]

#: ``rejected``: the admission pipeline turned the item down (``stage`` and ``code`` say
#: where and why); it is not stored, or keeps its stored status.
Outcome = Literal["imported", "unchanged", "failed", "rejected"]


@dataclass(frozen=True)
class ImportOutcome:
    """What happened to one item: ``env_id`` when stored, ``reason`` when it failed or
    was rejected (then ``stage``, ``code`` and, for a near-duplicate, ``duplicate_of``)."""

    origin: str
    outcome: Outcome
    env_id: str | None = None
    reason: str | None = None
    notes: tuple[str, ...] = ()
    stage: str | None = None
    code: str | None = None
    duplicate_of: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "outcome": self.outcome,
            "env_id": self.env_id,
            "reason": self.reason,
            "notes": list(self.notes),
            "stage": self.stage,
            "code": self.code,
            "duplicate_of": self.duplicate_of,
        }


@dataclass
class ImportReport:
    """Per-item outcomes of one ``spade import``, in input order."""

    outcomes: list[ImportOutcome] = field(default_factory=list)

    def count(self, outcome: Outcome) -> int:
        return sum(1 for o in self.outcomes if o.outcome == outcome)

    @property
    def ok(self) -> bool:
        return all(o.outcome not in ("failed", "rejected") for o in self.outcomes)


#: New environments written per store transaction.
WRITE_BATCH = 500


@dataclass
class _Pending:
    """A new environment waiting for the next batched write."""

    index: int
    item: PreparedItem
    metadata: EnvMetadata
    notes: tuple[str, ...]


class _BatchImport:
    """Decides each item's fate against the store and writes new ones in batches.

    Decisions read the store (``versions(name)``, skipped while the store started empty
    and the name was not written by this run); the common case, a new environment, is
    queued and written ``WRITE_BATCH`` at a time with ``add_many`` (one transaction per
    batch instead of per item). Before an item whose name is already queued is decided,
    the queue is written, so every decision sees everything before it.
    """

    def __init__(
        self,
        store: EnvStore,
        options: ImportOptions,
        new_version: bool,
        on_item: Callable[[ImportOutcome], None] | None,
    ) -> None:
        self.store = store
        self.options = options
        self.new_version = new_version
        self.on_item = on_item
        self.outcomes: list[ImportOutcome | None] = []
        self.pending: list[_Pending] = []
        self.pending_names: set[str] = set()
        # Importing into an empty store (the usual first import of a pool) needs no
        # per-item lookups: only names this run wrote can exist. Should another writer
        # add a clashing name meanwhile, the batched write fails as a whole and every
        # item of that batch is decided again against the store (see ``flush``).
        self.store_was_empty = store.count() == 0
        self.written: set[str] = set()
        #: Admission reports by item index (``None``: no validation for that item).
        self.verdicts: dict[int, ValidationReport | None] = {}

    def _versions(self, name: str) -> list[EnvMetadata]:
        if self.store_was_empty and name not in self.written:
            return []
        return list(self.store.versions(name))

    def _finish(self, index: int, outcome: ImportOutcome) -> None:
        self.outcomes[index] = outcome
        if self.on_item is not None:
            self.on_item(outcome)

    def flush(self) -> None:
        if not self.pending:
            return
        batch, self.pending, self.pending_names = self.pending, [], set()
        try:
            saved = self.store.add_many([(p.item.source, p.metadata) for p in batch])
        except StoreError as exc:
            if self.store_was_empty:
                # Decided without lookups and the write failed: decide again against the
                # store (a clash from another writer becomes a per-item outcome; a broken
                # store fails again on the first lookup and stops the import).
                self.store_was_empty = False
                for p in batch:
                    self._decide(p.index, p.item)
                self.flush()
                return
            done = sum(o is not None for o in self.outcomes)
            raise StoreError(
                f"import stopped writing {batch[0].item.origin}..{batch[-1].item.origin} "
                f"after {done} item(s): {exc}"
            ) from exc
        for p, meta in zip(batch, saved, strict=True):
            self.written.add(meta.name)
            self._finish(p.index, ImportOutcome(p.item.origin, "imported", meta.id, notes=p.notes))

    def add(self, raw: RawItem, prepared: PreparedItem | ItemError | None = None, verdict: ValidationReport | None = None) -> None:
        """Decide one item (``prepared`` when the caller prepared it already; ``verdict``:
        its admission report, when the import validates)."""
        index = len(self.outcomes)
        self.outcomes.append(None)
        if prepared is None:
            try:
                prepared = prepare(raw, self.options)
            except ItemError as exc:
                prepared = exc
        if isinstance(prepared, ItemError):
            self._finish(index, ImportOutcome(raw.origin, "failed", reason=prepared.reason))
            return
        self.verdicts[index] = verdict
        if prepared.metadata.name in self.pending_names or (
            prepared.name_derived and any(n.startswith(prepared.metadata.name) for n in self.pending_names)
        ):
            self.flush()
        try:
            self._decide(index, prepared)
        except (InvalidTransition, EnvNotFound) as exc:
            self._finish(index, ImportOutcome(raw.origin, "failed", reason=str(exc)))
        except StoreError as exc:
            done = sum(o is not None for o in self.outcomes)
            raise StoreError(f"import stopped at {raw.origin} after {done} item(s): {exc}") from exc
        if len(self.pending) >= WRITE_BATCH:
            self.flush()

    def _decide(self, index: int, item: PreparedItem) -> None:
        """Idempotent for code already stored under the same name; see :func:`import_items`."""
        store = self.store
        meta = item.metadata
        notes = list(item.ignored and [f"ignored columns: {', '.join(item.ignored)}"]) + list(item.notes)
        verdict = self.verdicts.get(index)
        stored = self._versions(meta.name)
        same_code = next((m for m in stored if m.code_hash == meta.code_hash), None)
        if same_code is None and item.name_derived:
            # The code may be stored under its disambiguated name (see below).
            renamed = f"{meta.name[:111]}_{meta.code_hash[:8]}"
            if renamed in self.pending_names:
                self.flush()
            same_code = next((m for m in self._versions(renamed) if m.code_hash == meta.code_hash), None)
        if same_code is not None and same_code.domain != meta.domain:
            reason = (
                f"this code is already stored as {same_code.id} in domain {same_code.domain!r}, not {meta.domain!r}; "
                "the same code cannot be two environments (import it under its domain, or change the stored one)"
            )
            self._finish(index, ImportOutcome(item.origin, "failed", same_code.id, reason=reason, notes=tuple(notes)))
            return
        if same_code is None and stored and item.name_derived:
            # A name taken from the class name says nothing about identity: two different
            # pool entries may both define ``MazeEnv``. Disambiguate deterministically by
            # the code hash so that a re-import finds the same name again.
            renamed = f"{meta.name[:111]}_{meta.code_hash[:8]}"
            notes.append(f"name {meta.name!r} is taken by other code; stored as {renamed!r}")
            meta = meta.model_copy(update={"name": renamed, "id": f"{renamed}-v{meta.version}"})
            if renamed in self.pending_names:
                self.flush()
            stored = self._versions(renamed)
            same_code = next((m for m in stored if m.code_hash == meta.code_hash), None)
        if same_code is not None:
            if self.options.status is not None and same_code.status != self.options.status:
                if verdict is not None and not verdict.passed:
                    notes.append(f"stays {same_code.status.value}")
                    self._finish(index, _rejected(item.origin, verdict, same_code.id, notes))
                    return
                if verdict is not None:
                    store.set_validation(same_code.id, verdict)
                updated = store.set_status(same_code.id, self.options.status)
                notes.append(f"status {same_code.status.value} -> {updated.status.value}")
            self._finish(index, ImportOutcome(item.origin, "unchanged", same_code.id, notes=tuple(notes)))
            return
        if verdict is not None:
            if not verdict.passed:
                self._finish(index, _rejected(item.origin, verdict, None, notes))
                return
            meta = meta.model_copy(update={"validation": verdict})
        if any(m.version == meta.version for m in stored):
            if not self.new_version:
                reason = f"{meta.id} already exists with different code (use --new-version to add it as the next version)"
                self._finish(index, ImportOutcome(item.origin, "failed", reason=reason, notes=tuple(notes)))
                return
            saved = store.add(item.source, meta, new_version=True)
            self.written.add(saved.name)
            self._finish(index, ImportOutcome(item.origin, "imported", saved.id, notes=tuple(notes)))
            return
        self.pending.append(_Pending(index, item, meta, tuple(notes)))
        self.pending_names.add(meta.name)


def _rejected(origin: str, report: ValidationReport, env_id: str | None, notes: list[str]) -> ImportOutcome:
    failing = next((f for f in report.findings if not f.ok), None)
    reason = report.reasons[0] if report.reasons else "rejected by validation"
    if report.duplicate_of:
        reason += f" (near-duplicate of {report.duplicate_of}, admitted first)"
    return ImportOutcome(
        origin, "rejected", env_id, reason=reason, notes=tuple(notes), stage=report.failed_stage,
        code=failing.code if failing else None, duplicate_of=report.duplicate_of,
    )


#: Items validated per call of the admission validator (then written, so the next
#: chunk's novelty check sees them admitted).
VALIDATE_BATCH = 64


def import_items(
    store: EnvStore,
    items: Iterable[RawItem],
    options: ImportOptions = ImportOptions(),
    *,
    new_version: bool = False,
    on_item: Callable[[ImportOutcome], None] | None = None,
    validator: AdmissionValidator | None = None,
) -> ImportReport:
    """Prepare and store every item; item problems are outcomes, never exceptions.

    Rules per item: code already stored under its name is ``unchanged`` (``--status``
    still applies) unless it is stored under another domain (``failed``, naming the
    stored one); a derived name taken by other code gets the code hash as suffix; an
    explicit ``name-vN`` taken by other code fails unless ``new_version`` (then it becomes
    the next version); anything else is ``imported``. Outcomes come in input order.

    With a ``validator`` every prepared item is validated first and only a passing one
    is stored (with its report) or given the new status; the others are ``rejected``
    with the stage and reason code. Of two near-duplicates the first to pass is admitted
    and the other is rejected as its duplicate (``duplicate_of``).

    A :class:`~spade_core.errors.StoreError` about the store itself (it cannot be read or
    written) stops the batch and is raised naming where it stopped; items written before
    stay written.
    """
    run = _BatchImport(store, options, new_version, on_item)
    if validator is None:
        for raw in items:
            run.add(raw)
    else:
        chunk: list[RawItem] = []
        for raw in items:
            chunk.append(raw)
            if len(chunk) >= VALIDATE_BATCH:
                _validated_chunk(run, chunk, options, validator)
                chunk = []
        if chunk:
            _validated_chunk(run, chunk, options, validator)
    run.flush()
    return ImportReport([o for o in run.outcomes if o is not None])


def _as_stored(run: _BatchImport, items: list[PreparedItem]) -> list[EnvMetadata]:
    """Each item's metadata under the id it has (or will get) in the store, so that the
    validator's novelty check excludes the item itself and nothing else: code already
    stored keeps its id, a derived name taken by other code (stored, or earlier in the
    batch) gets the hash suffix :meth:`_BatchImport._decide` will give it."""
    out: list[EnvMetadata] = []
    seen: dict[str, str] = {}  # id in this batch -> code hash
    for item in items:
        meta = item.metadata
        stored = run._versions(meta.name)
        same = next((m for m in stored if m.code_hash == meta.code_hash), None)
        env_id = same.id if same else meta.id
        if same is None and item.name_derived:
            renamed = f"{meta.name[:111]}_{meta.code_hash[:8]}"
            same = next((m for m in run._versions(renamed) if m.code_hash == meta.code_hash), None)
            if same is not None:
                env_id = same.id
            elif stored or seen.get(meta.id, meta.code_hash) != meta.code_hash:
                env_id = f"{renamed}-v{meta.version}"
        seen.setdefault(env_id, meta.code_hash)
        out.append(meta if env_id == meta.id else meta.model_copy(update={"id": env_id}))
    return out


def _validated_chunk(run: _BatchImport, chunk: list[RawItem], options: ImportOptions, validator: AdmissionValidator) -> None:
    prepared: list[PreparedItem | ItemError] = []
    for raw in chunk:
        try:
            prepared.append(prepare(raw, options))
        except ItemError as exc:
            prepared.append(exc)
    good = [p for p in prepared if isinstance(p, PreparedItem)]
    judged = _as_stored(run, good)
    reports = validator.validate([(p.source, m) for p, m in zip(good, judged, strict=True)], run.store) if good else []
    if len(reports) != len(good):
        raise SpadeError(f"the admission validator returned {len(reports)} reports for {len(good)} items")
    verdicts = {id(p): r for p, r in zip(good, reports, strict=True)}
    for raw, p in zip(chunk, prepared, strict=True):
        run.add(raw, p, verdicts.get(id(p)))
    run.flush()
