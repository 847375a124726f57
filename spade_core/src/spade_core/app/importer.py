r"""Reading environment pools from disk into store-ready ``(source, EnvMetadata)`` pairs.

Accepted inputs (what ``spade import`` reads):

* a ``.py`` file holding one reference-format environment, optionally with a sidecar
  ``<stem>.json`` of metadata next to it (what ``spade export --format dir`` writes);
* a folder: every ``*.py`` (with sidecars), ``*.jsonl`` and ``*.parquet`` in it, sorted;
* JSONL or Parquet with one environment per row, as published pools are: the code in a
  column named ``code`` / ``env_code`` / ``source`` / ``env_source`` / ``program`` and
  metadata either as flat columns (``name`` / ``env_name`` / ``env_id``, ``skill``,
  ``description``, ``domain``, ``difficulty``, ``max_turns``...), possibly nested in a
  ``metadata`` object, or as a full :class:`~spade_core.metadata.EnvMetadata` document
  (with ``schema_version``) in a ``metadata`` column (what ``spade export`` writes).

Every row is judged on its own: a malformed line, missing code, a syntax error, no class
ending in ``Env``, metadata that fails validation, a row too large or nested too deeply,
or a file that is a link out of the folder becomes an :class:`ItemError` naming the row
and the reason, and never stops the rest of the batch. Only a problem with the input as
a whole (no such path, unsupported format, a Parquet decompression bomb) raises
:class:`ImportSourceError`. Files are read through :mod:`spade_core.app.dataset_files`: links
must stay inside the folder, rows and decoding are bounded.

A row's own status is the data's word, not the user's: unless ``ImportOptions.trust``
(``spade import --trust``) or ``ImportOptions.status`` (``--status``, which replaces it;
``admitted`` is then validated by the CLI), a row recorded as ``admitted`` is read as a
``candidate`` with a note. :func:`prepare` applies this rule, for every path (files,
folders, ``hf:`` datasets) alike.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from ..admission import AdmissionValidator
from ..errors import EnvLoadError, EnvNotFound, InvalidTransition, SpadeError, StoreError
from ..metadata import EnvMetadata, EnvStatus, ValidationReport, code_hash
from ..source import env_class_node, parse_source
from .dataset_files import (
    MAX_ROW_BYTES,
    MAX_SOURCE_BYTES,
    DecodeBudget,
    ImportSourceError,
    JSONNestingError,
    JSONSyntaxError,
    OutsideDataset,
    dataset_root,
    iter_json_lines,
    iter_parquet_rows,
    load_json,
    nesting_error,
    open_parquet,
    read_text_bounded,
    resolve_inside,
)

if TYPE_CHECKING:
    from ..domains import Domain
    from ..store import EnvStore

#: Column names that may hold the environment's code, in order of preference.
CODE_KEYS = ("code", "env_code", "source", "env_source", "program")
#: Column names that may hold the environment's name, in order of preference.
NAME_KEYS = ("name", "env_name", "env_id", "id")
SKILL_KEYS = ("skill", "skill_name", "category")
DESCRIPTION_KEYS = ("description", "env_description", "desc")
DOMAIN_KEYS = ("domain", "setting")
#: Flat columns copied into the metadata as they are (validated by the model).
PASSTHROUGH_KEYS = (
    "difficulty",
    "max_turns",
    "reward_range",
    "action_format",
    "designer_model",
    "hint",
    "tags",
    "parent_ids",
    "nondeterministic",
    "status",
)
#: Skill given to environments whose row names none and no ``--skill`` was passed.
DEFAULT_SKILL = "general"
SUFFIXES = (".py", ".jsonl", ".parquet")
#: The note of a row whose recorded ``admitted`` was read as ``candidate`` (see the module docstring).
UNTRUSTED_STATUS_NOTE = (
    "recorded as admitted in the dataset, read as a candidate (--status admitted validates it; "
    "--trust keeps the dataset's status)"
)


class ItemError(SpadeError):
    """One item of an import batch is unusable; ``origin`` names it (file, file:line)."""

    def __init__(self, origin: str, reason: str) -> None:
        super().__init__(f"{origin}: {reason}")
        self.origin = origin
        self.reason = reason


@dataclass(frozen=True)
class RawItem:
    """One environment as read from disk, before any validation.

    ``error`` is set when the item could not even be read (a malformed JSON line).
    """

    origin: str
    row: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    #: ``True`` for a ``.py`` file (its metadata, if any, comes from a sidecar file), so
    #: messages speak of files rather than columns.
    from_file: bool = False
    #: ``True`` when a row without a domain gets the one its code implies, as a ``.py``
    #: file does (rows of a published pool, whose data names no domain).
    infer_domain: bool = False
    #: What reading decided that the user should hear (a status not taken from the data).
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ImportOptions:
    """Values given on the command line; when set they apply to every item."""

    domain: str | None = None
    skill: str | None = None
    #: Replaces every row's status (``admitted`` is validated by the CLI unless ``trust``).
    status: EnvStatus | None = None
    #: Take the statuses the data records as they are (``spade import --trust``); without
    #: it (and without ``status``) a row recorded as ``admitted`` is read as a ``candidate``.
    trust: bool = False
    #: Action format (``"boxed"``, ``"tool_call"``) -> the one installed domain that uses
    #: it: the domain of a ``.py`` file whose metadata names none is inferred from its code.
    format_domains: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PreparedItem:
    """A validated item: the code, its metadata, and how the name was obtained."""

    origin: str
    source: str
    metadata: EnvMetadata
    #: ``True`` when the name came from the class name rather than the data.
    name_derived: bool
    #: Columns of the row that were not understood (reported, not stored).
    ignored: tuple[str, ...] = ()
    #: What preparing decided that the user should hear (an inferred domain).
    notes: tuple[str, ...] = ()


# --- reading -------------------------------------------------------------------------


def read_items(path: str | Path) -> Iterator[RawItem]:
    """Every item under ``path`` in a stable order (see the module docstring).

    Files are read only where their real path (links resolved) lies inside the folder
    (:func:`~spade_core.app.dataset_files.dataset_root`): a file of a folder that links out of
    it is a failed item; a single file that does is refused as a whole."""
    p = Path(path)
    if not p.exists():
        raise ImportSourceError(f"{p}: no such file or folder")
    if p.is_dir():
        root = dataset_root(p)
        files = sorted(f for f in p.iterdir() if f.suffix in SUFFIXES and (f.is_file() or f.is_symlink()))
        if not files:
            raise ImportSourceError(f"{p}: the folder holds no .py, .jsonl or .parquet files")
        budget = DecodeBudget.for_files(f for f in files if f.suffix == ".parquet")
        for f in files:
            try:
                real = resolve_inside(f, root)
            except OutsideDataset as exc:
                yield RawItem(f.name, error=exc.reason, from_file=f.suffix == ".py")
                continue
            yield from _file_items(f, real, root, budget)
    else:
        root = dataset_root(p.parent)
        try:
            real = resolve_inside(p, root, str(p))
        except OutsideDataset as exc:
            raise ImportSourceError(f"{exc} (import the file it links to by its own name)") from None
        yield from _read_file(p, real, root, None)


def _file_items(p: Path, real: Path, root: Path, budget: DecodeBudget) -> Iterator[RawItem]:
    """The items of one file of a folder. Odd data a reader did not foresee (nested too
    deeply for the interpreter, an exception of a library) is that file's failed item, and
    the folder's other files still import; what the readers raise on purpose
    (:class:`ImportSourceError`: the input refused as a whole, a decompression bomb) stops
    the import, as the module doc says."""
    try:
        yield from _read_file(p, real, root, budget)
    except SpadeError:
        raise
    except RecursionError:
        yield RawItem(p.name, error="the file is nested too deeply to read", from_file=p.suffix == ".py")
    except Exception as exc:
        yield RawItem(p.name, error=f"cannot read the file ({type(exc).__name__}: {exc})", from_file=p.suffix == ".py")


def _read_file(p: Path, real: Path, root: Path, budget: DecodeBudget | None) -> Iterator[RawItem]:
    """``p`` as named (for messages), read from ``real`` (its resolved path inside ``root``)."""
    if p.suffix == ".py":
        yield _read_py(p, real, root)
    elif p.suffix == ".jsonl":
        yield from _read_jsonl(p, real)
    elif p.suffix == ".parquet":
        yield from _read_parquet(p, real, budget or DecodeBudget.for_files([real]))
    else:
        raise ImportSourceError(f"{p}: unsupported file type {p.suffix!r} (use .py, .jsonl, .parquet or a folder)")


def _read_py(p: Path, real: Path, root: Path) -> RawItem:
    try:
        size = real.stat().st_size
        if size > MAX_SOURCE_BYTES:
            return RawItem(p.name, error=f"code is {size} bytes (limit {MAX_SOURCE_BYTES})", from_file=True)
        code = read_text_bounded(real, MAX_SOURCE_BYTES, "the file")
    except (OSError, ValueError) as exc:
        return RawItem(p.name, error=f"cannot read: {exc}", from_file=True)
    row: dict[str, Any] = {}
    sidecar = p.with_suffix(".json")
    if sidecar.is_file() or sidecar.is_symlink():
        bad = f"metadata file {sidecar.name}"
        try:
            meta = load_json(read_text_bounded(resolve_inside(sidecar, root), MAX_ROW_BYTES, "it"))
        except OutsideDataset as exc:
            return RawItem(p.name, error=f"{bad} {exc.reason}", from_file=True)
        except JSONSyntaxError as exc:
            return RawItem(p.name, error=f"{bad} is not valid JSON: {exc}", from_file=True)
        except JSONNestingError as exc:
            return RawItem(p.name, error=f"{bad} is JSON {exc}", from_file=True)
        except (OSError, ValueError) as exc:
            return RawItem(p.name, error=f"cannot read {bad}: {exc}", from_file=True)
        if not isinstance(meta, dict):
            return RawItem(p.name, error=f"{bad} must hold a JSON object", from_file=True)
        row.update(meta)
    row["code"] = code
    return RawItem(p.name, row, from_file=True)


def _read_jsonl(p: Path, real: Path) -> Iterator[RawItem]:
    try:
        handle = real.open("rb")
    except OSError as exc:
        raise ImportSourceError(f"{p}: cannot read: {exc}") from None
    with handle:
        for lineno, row, error in iter_json_lines(handle):
            origin = f"{p.name}:{lineno}"
            if error is not None:
                yield RawItem(origin, error=error)
            elif not isinstance(row, dict):
                yield RawItem(origin, error=f"a line must hold a JSON object, got {type(row).__name__}")
            else:
                yield RawItem(origin, row)


def _read_parquet(p: Path, real: Path, budget: DecodeBudget) -> Iterator[RawItem]:
    pf = open_parquet(real, str(p))
    for index, row, error in iter_parquet_rows(pf, p.name, budget):
        yield RawItem(f"{p.name}#{index}", row or {}, error=error)


# --- preparing -----------------------------------------------------------------------


def sanitize_name(raw: str) -> str:
    """Turn any label into a valid environment name (``NAME_RE``), keeping it readable.

    ``spade/foo-v3`` -> ``foo``; ``tower-of-hanoi 3`` -> ``tower_of_hanoi_3``; a label that
    does not start with a letter gets the prefix ``env_``.
    """
    s = raw.strip()
    s = re.sub(r"^spade/", "", s)
    s = re.sub(r"-v\d+$", "", s)
    s = re.sub(r"[^A-Za-z0-9_.]+", "_", s).strip("_.")
    if not s:
        s = "env"
    elif not s[0].isalpha():
        s = "env_" + s
    return s[:120]


def name_from_class(class_name: str) -> str:
    """``TowerOfHanoiEnv`` -> ``TowerOfHanoi`` (a bare ``Env`` stays ``Env``)."""
    stem = class_name[: -len("Env")] if class_name.endswith("Env") and len(class_name) > 3 else class_name
    return sanitize_name(stem)


def _first(row: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    for k in keys:
        v = row.get(k)
        if v is not None and v != "":
            return k, v
    return None, None


def _validation_reason(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "metadata"
        parts.append(f"{loc}: {err['msg']}")
    return "invalid metadata: " + "; ".join(parts)


def prepare(item: RawItem, options: ImportOptions = ImportOptions()) -> PreparedItem:
    """Validate one item; raise :class:`ItemError` with the reason when it is unusable.

    Whatever the row holds, the outcome is a :class:`PreparedItem` or an :class:`ItemError`:
    an unexpected failure on odd data is that row's failure, never the batch's. The status
    it gets follows the one rule of the module docstring (:func:`_status_rule`)."""
    try:
        prepared = _prepare(item, options)
    except ItemError:
        raise
    except RecursionError:
        raise ItemError(item.origin, "the row is nested too deeply to read") from None
    except Exception as exc:  # odd data a check above missed: still this row's outcome only
        raise ItemError(item.origin, f"unreadable row ({type(exc).__name__}: {exc})") from None
    prepared = _status_rule(prepared, options)
    if item.notes:
        prepared = replace(prepared, notes=item.notes + prepared.notes)
    return prepared


def _status_rule(item: PreparedItem, options: ImportOptions) -> PreparedItem:
    """The one place that decides which status a row's own record may give it: a dataset
    is someone else's word, so without ``trust`` (and without ``status``, which replaced
    the row's status already) a recorded ``admitted`` becomes ``candidate``, with a note.
    Every import path (``.py`` + sidecar, JSONL, Parquet, folders, ``hf:``) goes through here."""
    if options.status is not None or options.trust or item.metadata.status is not EnvStatus.admitted:
        return item
    meta = item.metadata.model_copy(update={"status": EnvStatus.candidate})
    return replace(item, metadata=meta, notes=(*item.notes, UNTRUSTED_STATUS_NOTE))


def _prepare(item: RawItem, options: ImportOptions) -> PreparedItem:
    if item.error is not None:
        raise ItemError(item.origin, item.error)
    row = item.row
    if not isinstance(row, Mapping):
        raise ItemError(item.origin, f"a row must be an object, got {type(row).__name__}")
    deep = nesting_error(row)
    if deep is not None:
        raise ItemError(item.origin, f"the row is {deep}")
    code_key, code = _first(row, CODE_KEYS)
    if code is None:
        raise ItemError(item.origin, f"no code (looked for a column named {', '.join(CODE_KEYS)})")
    if not isinstance(code, str):
        raise ItemError(item.origin, f"column {code_key!r} holds {type(code).__name__}, expected the source text")
    size = len(code.encode("utf-8"))
    if size > MAX_SOURCE_BYTES:
        raise ItemError(item.origin, f"code is {size} bytes (limit {MAX_SOURCE_BYTES})")
    try:
        class_node = env_class_node(parse_source(code))  # the only parse of this code
    except EnvLoadError as exc:
        raise ItemError(item.origin, str(exc).removeprefix("<env>: ")) from None
    class_name = class_node.name
    docstring = " ".join((ast.get_docstring(class_node) or "").split())[:2000]

    nested = row.get("metadata")
    if nested is not None:
        if isinstance(nested, str):
            try:
                nested = load_json(nested)
            except JSONSyntaxError as exc:
                raise ItemError(item.origin, f"column 'metadata' is not valid JSON: {exc}") from None
            except ValueError as exc:
                raise ItemError(item.origin, f"column 'metadata' is JSON {exc}") from None
        if not isinstance(nested, dict):
            raise ItemError(item.origin, "column 'metadata' must hold a JSON object")
        if "schema_version" in nested:  # our own document (an export)
            return _prepare_full(item.origin, code, nested, options)
        # Someone else's metadata object: its keys count as flat columns; the row's own
        # columns win where both name the same thing.
        row = {**nested, **{k: v for k, v in row.items() if k != "metadata"}}
    if "schema_version" in row:  # a full metadata document flattened into the row (sidecar)
        meta = {k: v for k, v in row.items() if k not in CODE_KEYS}
        return _prepare_full(item.origin, code, meta, options)
    return _prepare_flat(
        item.origin, code, code_key or "code", class_name, docstring, row, options,
        from_file=item.from_file, class_node=class_node, infer_domain=item.infer_domain,
    )


def _apply_options(data: dict[str, Any], options: ImportOptions) -> None:
    if options.domain is not None:
        data["domain"] = options.domain
    if options.skill is not None:
        data["skill"] = options.skill
    if options.status is not None:
        data["status"] = options.status


def _prepare_full(
    origin: str, code: str, data: dict[str, Any], options: ImportOptions
) -> PreparedItem:
    """A complete metadata document (an export): validated strictly and kept as it is
    (nothing renamed or filled in), so export -> import reproduces the record."""
    data = dict(data)
    recorded = data.get("code_hash")
    actual = code_hash(code)
    if recorded and recorded != actual:
        raise ItemError(origin, "code_hash in the metadata does not match the code (was the code edited?)")
    data["code_hash"] = actual
    _apply_options(data, options)
    try:
        meta = EnvMetadata.model_validate(data)
    except ValidationError as exc:
        raise ItemError(origin, _validation_reason(exc)) from None
    return PreparedItem(origin, code, meta, name_derived=False)


def _prepare_flat(
    origin: str,
    code: str,
    code_key: str,
    class_name: str,
    docstring: str,
    row: Mapping[str, Any],
    options: ImportOptions,
    *,
    from_file: bool = False,
    class_node: ast.ClassDef | None = None,
    infer_domain: bool = False,
) -> PreparedItem:
    """Flat columns of a published pool: aliases resolved, the name sanitised or derived."""
    used = {code_key}
    notes: list[str] = []
    name_key, raw_name = _first(row, NAME_KEYS)
    if raw_name is not None:
        used.add(name_key or "")
        name = sanitize_name(str(raw_name))
        derived = False
    else:
        name = name_from_class(class_name)
        derived = True
    data: dict[str, Any] = {"name": name, "class_name": class_name, "code_hash": code_hash(code)}

    for target, keys in (("domain", DOMAIN_KEYS), ("skill", SKILL_KEYS), ("description", DESCRIPTION_KEYS)):
        key, value = _first(row, keys)
        if key is not None:
            used.add(key)
            data[target] = value
    for key in PASSTHROUGH_KEYS:
        if key in row and row[key] is not None:
            used.add(key)
            data[key] = row[key]
    _apply_options(data, options)
    if "domain" not in data and (from_file or infer_domain):
        data["domain"] = _infer_domain(origin, code, class_node, options, from_file=from_file)
        notes.append(f"domain {data['domain']!r} inferred from the code")
    if "domain" not in data:
        raise ItemError(origin, "no domain: the data has no 'domain' column; pass --domain")
    data.setdefault("skill", DEFAULT_SKILL)
    if "reward_range" not in data:
        found = _reward_range(code, class_name, str(data["domain"]))
        if found is not None:
            data["reward_range"] = found
    if "action_format" not in data:
        domain = _installed_domain(str(data["domain"]))
        if domain is not None:  # a tool-use environment reads tool calls, not boxed commands
            data["action_format"] = domain.action_format
    if not data.get("description"):
        data["description"] = docstring
    try:
        meta = EnvMetadata.model_validate(data)
    except ValidationError as exc:
        raise ItemError(origin, _validation_reason(exc)) from None
    ignored = tuple(sorted(k for k in row if k not in used and k not in NAME_KEYS))
    return PreparedItem(origin, code, meta, name_derived=derived, ignored=ignored, notes=tuple(notes))


def _reward_range(code: str, class_name: str | None, domain: str) -> tuple[float, float] | None:
    """The range an item without one in its data gets (what the validator enforces and
    ``gymnasium.make`` checks): the class attribute ``reward_range`` the code declares,
    else its domain's (tool use: [-0.1, 1]); ``None`` leaves the metadata's default."""
    from ..env import declared_reward_range

    try:
        declared = declared_reward_range(code, class_name)
    except (SyntaxError, ValueError, SpadeError):
        declared = None  # a malformed declaration is the validator's to report
    if declared is not None:
        return declared
    found = _installed_domain(domain)
    return tuple(found.reward_range) if found is not None else None  # type: ignore[return-value]


def _installed_domain(name: str) -> Domain | None:
    """The installed domain plugin called ``name`` (``None``: none, or plugins failed to load)."""
    from ..plugins import get_plugins

    try:
        return get_plugins().domains().get(name)
    except SpadeError:
        return None


#: Base classes that make an environment a tool-use one (the reference base and ours).
TOOL_BASES = frozenset({"ToolUseBaseEnv", "ToolEnv"})


def infer_action_format(code: str, class_node: ast.ClassDef | None = None) -> str | None:
    r"""The action format an environment's code reads: ``"tool_call"`` when its class
    subclasses a tool-use base or the code parses ``<tool_call>`` tags, ``"boxed"`` when
    it reads ``oxed{...}`` commands; ``None`` when the code says neither."""
    bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", None) for b in (class_node.bases if class_node else ())}
    if bases & TOOL_BASES or "<tool_call>" in code:
        return "tool_call"
    if "boxed{" in code:
        return "boxed"
    return None


def _infer_domain(
    origin: str, code: str, class_node: ast.ClassDef | None, options: ImportOptions, *, from_file: bool = True
) -> str:
    stem = origin.rsplit(".", 1)[0]
    unnamed = f"no metadata file ({stem}.json) names one" if from_file else "the data has no 'domain' column"
    fmt = infer_action_format(code, class_node)
    if fmt is None:
        raise ItemError(
            origin,
            f"no domain: {unnamed}, and the code neither reads "
            "\\boxed{...} commands nor subclasses a tool-use base; pass --domain",
        )
    what = "tool calls" if fmt == "tool_call" else "\\boxed{...} commands"
    domain = options.format_domains.get(fmt)
    if domain is None:
        raise ItemError(
            origin,
            f"no domain: {unnamed}, and no single installed domain "
            f"takes {what}, which the code reads; pass --domain",
        )
    return domain



# --- storing -------------------------------------------------------------------------

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
