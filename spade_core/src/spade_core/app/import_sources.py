"""Reading environment pools from disk into :class:`RawItem` rows, before any validation.

Accepted inputs (what ``spade import`` reads):

* a ``.py`` file holding one reference-format environment, optionally with a sidecar
  ``<stem>.json`` of metadata next to it (what ``spade export --format dir`` writes);
* a folder: every ``*.py`` (with sidecars), ``*.jsonl`` and ``*.parquet`` in it, sorted;
* JSONL or Parquet with one environment per row, as published pools are (the columns
  :mod:`.import_rows` understands).

A row that cannot be read (a malformed line, a file that is a link out of the folder, a
file a reader did not foresee) is a :class:`RawItem` with its ``error``, and never stops the
rest of the batch. Only a problem with the input as a whole (no such path, unsupported
format, a Parquet decompression bomb) raises :class:`ImportSourceError`. Files are read
through :mod:`spade_core.app.dataset_files`: links must stay inside the folder, rows and
decoding are bounded.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SpadeError
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
    open_parquet,
    read_text_bounded,
    resolve_inside,
)

SUFFIXES = (".py", ".jsonl", ".parquet")


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
