"""Reading the files of a pool (a dataset) so that it neither reaches nor costs outside itself.

Every reader of ``spade import`` (:mod:`spade_core.app.importer`, :mod:`spade_core.app.hub_layout`,
:mod:`spade_core.app.published_pools`) opens a dataset's files through these helpers:

* **Containment.** A file is read only when its real path (links resolved) lies inside
  the dataset's folder (:func:`dataset_root`): the folder named on the command line (for
  a single file, the folder holding it) or, for a folder inside a Hugging Face cache
  snapshot (``<cache>/datasets--OWNER--NAME/snapshots/<revision>/...``, whose files are
  links into ``../../blobs/``), that cache repository's folder. A path the data names
  (a manifest entry, a card's ``data_files`` pattern) must in addition stay inside the
  folder as written: not absolute, no ``..`` (:func:`relative_inside`).
* **Bounded rows.** A JSON line longer than :data:`MAX_ROW_BYTES` is a failed row, read
  past without being held (:func:`iter_json_lines`); a whole-file JSON document over
  :data:`MAX_JSON_DOCUMENT_BYTES` is refused; files are size-checked before they are read.
* **Bounded Parquet.** :func:`open_parquet` refuses a file whose pages hold more values or
  bytes than its footer says (:func:`check_pages_against_footer`, reading the page headers
  with :mod:`.parquet_pages`), so the footer's figures the checks below trust are the
  pages'. :func:`iter_parquet_rows` refuses, before decoding anything, a
  column chunk that decompresses to more than :data:`MAX_EXPANSION` times its stored
  size (beyond :data:`MAX_ROW_BYTES`), or whose values could not fit the file's decoding
  budget once converted (each value at least a :data:`PY_POINTER`, a boolean bit
  included); then it decodes :data:`PARQUET_BATCH_ROWS` rows at a time, charging each
  batch's cost *as Python objects* (pointers, object headers, text: a list of a million
  one-boolean structs is 125 KB of Arrow bits and a million dicts, about 200 MB, once
  converted) to a :class:`DecodeBudget` of :data:`MAX_EXPANSION` times the file's size on
  disk (a dictionary- or run-length-encoded column repeats one stored value into many
  rows, which no metadata shows), and gives a row over :data:`MAX_ROW_BYTES` as a failed
  row without converting it. Peak memory is a few rows, never the decompressed file.
* **Nesting.** JSON nested deeper than :data:`MAX_JSON_DEPTH` is a failed row
  (:func:`load_json`, :func:`nesting_error`), never a ``RecursionError``.

A problem with a file as a whole raises :class:`ImportSourceError`; a problem with one
row is returned as its reason, for the importer to report as that row's outcome.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import IO, Any

from ..errors import SpadeError
from ..locations import json_error

#: Larger sources are refused: no designer writes a megabyte environment on purpose.
MAX_SOURCE_BYTES = 1_000_000
#: Largest row (a JSON line, a sidecar file, a decoded Parquet row): the code plus its
#: metadata, with room to spare.
MAX_ROW_BYTES = 4 * MAX_SOURCE_BYTES
#: Largest JSON document read whole (a ``.json`` table, ``manifest.json``, a dataset card).
MAX_JSON_DOCUMENT_BYTES = 256 * 1024 * 1024
#: Deepest JSON nesting a row may have (metadata documents nest about six levels).
MAX_JSON_DEPTH = 64
#: How many times its size on disk a Parquet file (or one column chunk) may decompress to;
#: code compresses about 3-10x.
MAX_EXPANSION = 64
#: Rows decoded per Parquet batch: peak memory is about this many rows.
PARQUET_BATCH_ROWS = 8
#: A Hugging Face cache repository folder: ``datasets--OWNER--NAME`` (or models, spaces).
HF_CACHE_REPO_RE = re.compile(r"^(?:datasets|models|spaces)--.+")


class ImportSourceError(SpadeError):
    """The import input as a whole cannot be read (missing path, unknown format)."""


class OutsideDataset(SpadeError):
    """A file of a dataset resolves outside it (a link, a path with ``..``): ``reason`` says
    where it leads (without the file's name, which the message starts with)."""

    def __init__(self, shown: str, reason: str) -> None:
        super().__init__(f"{shown}: {reason}" if shown else reason)
        self.reason = reason


class JSONSyntaxError(ValueError):
    """Malformed JSON; the message is the reason and place (``locations.json_error``)."""


class JSONNestingError(ValueError):
    """JSON nested deeper than :data:`MAX_JSON_DEPTH` (or than Python's parser allows)."""


# --- containment ---------------------------------------------------------------------


def dataset_root(folder: str | Path) -> Path:
    """The real folder a dataset's files must resolve inside (see the module docstring):
    ``folder`` itself (links resolved), or the cache repository folder of a Hugging Face
    cache snapshot that ``folder``, as named or once resolved, is or lies in."""
    named = Path(os.path.abspath(Path(folder).expanduser()))
    real = named.resolve()
    for path in (named, real):
        for candidate in (path, *path.parents):
            parent = candidate.parent
            if parent != candidate and parent.name == "snapshots" and HF_CACHE_REPO_RE.match(parent.parent.name):
                return parent.parent.resolve()
    return real


def resolve_inside(path: Path, root: Path, shown: str | None = None) -> Path:
    """``path`` with its links resolved, when that lies inside the real folder ``root``;
    else :class:`OutsideDataset` saying where it leads."""
    shown = path.name if shown is None else shown
    try:
        real = path.resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a link loop, a NUL byte, a name too long
        raise OutsideDataset(shown, f"cannot be resolved ({exc})") from None
    if not real.is_relative_to(root):
        what = "is a link to" if real != Path(os.path.abspath(path)) else "is"
        raise OutsideDataset(shown, f"{what} {real}, outside the dataset folder {root}; not read")
    return real


def relative_inside(value: str, what: str) -> PurePosixPath:
    """A relative path the data names, as written: refused (:class:`OutsideDataset`) when
    absolute, when it climbs out with ``..`` or when it holds a NUL byte."""
    shown = f"{what} {value!r}"
    if "\x00" in value:
        raise OutsideDataset(shown, "holds a NUL byte")
    pure = PurePosixPath(value.replace("\\", "/"))
    if pure.is_absolute() or re.match(r"^[A-Za-z]:", value):
        raise OutsideDataset(shown, "is absolute; it must be a path inside the dataset")
    if ".." in pure.parts:
        raise OutsideDataset(shown, "climbs out with '..'; it must be a path inside the dataset")
    return pure


def read_text_bounded(real: Path, limit: int, shown: str) -> str:
    """The UTF-8 text of ``real``, refused (``ValueError`` with the reason) when it is larger
    than ``limit`` bytes or not UTF-8; never reads more than ``limit + 1`` bytes."""
    with real.open("rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{shown} is more than {limit} bytes (limit {limit})")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{shown} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None


# --- JSON ----------------------------------------------------------------------------


def nesting_error(value: Any, limit: int = MAX_JSON_DEPTH) -> str | None:
    """Why ``value`` (lists and dicts) nests too deeply, or ``None``; iterative, so any depth is safe."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Iterable[Any] = node.values()
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            continue
        if depth > limit:
            return f"nested more than {limit} levels deep"
        stack.extend((child, depth + 1) for child in children)
    return None


def load_json(text: str | bytes, depth_limit: int | None = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` that raises :class:`JSONSyntaxError` (the reason and place) or
    :class:`JSONNestingError` (deeper than Python's parser or ``depth_limit`` allows; ``None``:
    the parser's limit only, for a document whose rows are checked one by one), never
    ``RecursionError``."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JSONSyntaxError(json_error(exc)) from exc
    except RecursionError:
        raise JSONNestingError(f"nested more than {depth_limit or MAX_JSON_DEPTH} levels deep") from None
    deep = None if depth_limit is None else nesting_error(value, depth_limit)
    if deep is not None:
        raise JSONNestingError(deep)
    return value


def _json_reason(exc: ValueError, *, one_line: bool) -> str:
    if isinstance(exc, JSONSyntaxError) and isinstance(exc.__cause__, json.JSONDecodeError):
        return f"malformed JSON: {json_error(exc.__cause__, one_line=one_line)}"
    return f"JSON {exc}"


_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_STRUCTURE = re.compile(_STRING + r"|[\[\]{}]")
_SPACE = re.compile(r"\s*")


def _value_end(text: str, start: int) -> int:
    """Where the JSON array or object starting at ``start`` ends (brackets counted
    outside strings, iteratively: for a value too deep to parse)."""
    depth = 0
    for m in _STRUCTURE.finditer(text, start):
        token = m.group()
        if token in "[{":
            depth += 1
        elif token in "]}":
            depth -= 1
            if depth == 0:
                return m.end()
    return len(text)


def iter_json_array(text: str) -> Iterator[tuple[Any, str | None]]:
    """The elements of the JSON array ``text`` one by one, ``(value, None)`` or ``(None,
    reason)`` for one nested too deeply (skipped, the rest still read): what a JSON document
    too deep for ``json.loads`` as a whole is read with. Raises :class:`JSONSyntaxError`
    when the array itself is malformed."""
    decoder = json.JSONDecoder()
    i = _SPACE.match(text, 0).end()  # type: ignore[union-attr]
    if text[i : i + 1] != "[":
        raise JSONSyntaxError("the document is not a JSON array")
    i = _SPACE.match(text, i + 1).end()  # type: ignore[union-attr]
    if text[i : i + 1] == "]":
        return
    while True:
        try:
            value, end = decoder.raw_decode(text, i)
        except RecursionError:
            end = _value_end(text, i)
            yield None, f"JSON nested more than {MAX_JSON_DEPTH} levels deep"
        except json.JSONDecodeError as exc:
            raise JSONSyntaxError(json_error(exc)) from exc
        else:
            deep = nesting_error(value)
            yield (None, f"JSON {deep}") if deep else (value, None)
        i = _SPACE.match(text, end).end()  # type: ignore[union-attr]
        if text[i : i + 1] == ",":
            i = _SPACE.match(text, i + 1).end()  # type: ignore[union-attr]
            continue
        if text[i : i + 1] == "]":
            return
        raise JSONSyntaxError(f"expected ',' or ']' at character {i + 1}")


def iter_json_lines(handle: IO[bytes], limit: int = MAX_ROW_BYTES) -> Iterator[tuple[int, Any, str | None]]:
    """``(line number, value, None)`` for each non-blank line of a binary JSON-lines file,
    or ``(line number, None, reason)`` for one that is too long (skipped without being
    held), not UTF-8, malformed or nested too deeply. Lines end at ``\\n``, ``\\r\\n`` or ``\\r``."""
    lineno = 0
    too_long = f"line is longer than {limit} bytes (the limit of one row)"
    while True:
        raw = handle.readline(limit + 2)
        if not raw:
            return
        if len(raw) == limit + 2 and not raw.endswith(b"\n"):
            lineno += 1
            while raw and not raw.endswith(b"\n"):  # read past the rest of this line
                raw = handle.readline(1 << 20)
            yield lineno, None, too_long
            continue
        body = raw[:-1] if raw.endswith(b"\n") else raw
        if body.endswith(b"\r"):
            body = body[:-1]
        for part in re.split(rb"\r\n?", body) if b"\r" in body else (body,):
            lineno += 1
            if not part.strip():
                continue
            if len(part) > limit:
                yield lineno, None, too_long
                continue
            try:
                text = part.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield lineno, None, f"not UTF-8 text ({exc.reason} at byte {exc.start + 1} of the line)"
                continue
            try:
                yield lineno, load_json(text), None
            except ValueError as exc:
                yield lineno, None, _json_reason(exc, one_line=True)


# --- Parquet -------------------------------------------------------------------------


class DecodeBudget:
    """How many bytes decoding a dataset's Parquet files may produce: :data:`MAX_EXPANSION`
    times their size on disk (at least :data:`MAX_ROW_BYTES`). Charged batch by batch."""

    def __init__(self, stored_bytes: int) -> None:
        self.stored = max(stored_bytes, 0)
        self.limit = max(MAX_ROW_BYTES, MAX_EXPANSION * self.stored)
        self.used = 0

    @classmethod
    def for_files(cls, paths: Iterable[Path]) -> DecodeBudget:
        total = 0
        for p in paths:
            try:
                total += p.stat().st_size
            except OSError:
                pass
        return cls(total)

    def charge(self, nbytes: int, shown: str) -> None:
        self.used += nbytes
        if self.used > self.limit:
            raise ImportSourceError(
                f"{shown}: decompresses to more than {self.limit} bytes, {MAX_EXPANSION} times the "
                f"{self.stored} bytes stored; refused as a decompression bomb"
            )


#: What one value costs at least once converted to Python: the pointer that holds it in its
#: row, list or dict (a bit of a BOOLEAN column is a whole pointer to ``True``/``False``).
PY_POINTER = 8
#: A number object (an ``int`` or ``float`` outside the small-int cache), its pointer too.
PY_NUMBER = PY_POINTER + 32
#: A ``str``/``bytes`` object's header, its pointer too; its text is added (ASCII: one byte a
#: character; text with characters past Latin-1 takes up to four times its UTF-8 size).
PY_TEXT = PY_POINTER + 49
#: An empty ``list`` object, its pointer too; its elements are added.
PY_LIST = PY_POINTER + 56


def _dict_bytes(keys: int) -> int:
    """What a dict of ``keys`` keys takes (a struct value, a row), its pointer too."""
    return PY_POINTER + sys.getsizeof(dict.fromkeys(range(keys)))


def check_parquet_metadata(pf: Any, shown: str, budget: DecodeBudget, columns: Iterable[str] | None = None) -> None:
    """Refuse, before decoding, what the footer already shows to be a decompression bomb:
    a column chunk stored at least :data:`MAX_EXPANSION` times smaller than it decompresses
    (beyond :data:`MAX_ROW_BYTES`), or leaf values that cannot fit the budget."""
    meta = pf.metadata
    wanted = None if columns is None else set(columns)
    floor = 0
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            chunk = group.column(c)
            name = chunk.path_in_schema
            if wanted is not None and name.split(".", 1)[0] not in wanted:
                continue
            stored, size = chunk.total_compressed_size, chunk.total_uncompressed_size
            if size > MAX_ROW_BYTES and size > MAX_EXPANSION * max(stored, 1):
                raise ImportSourceError(
                    f"{shown}: column {name!r} (row group {g}) decompresses from {stored} to {size} bytes, "
                    f"more than {MAX_EXPANSION} times; refused as a decompression bomb"
                )
            floor += max(size, chunk.num_values * PY_POINTER)
    if floor > budget.limit:
        raise ImportSourceError(
            f"{shown}: its columns decode to at least {floor} bytes, more than {budget.limit} "
            f"({MAX_EXPANSION} times the {budget.stored} bytes stored); refused as a decompression bomb"
        )


def open_parquet(path: Path, shown: str) -> Any:
    """A ``pyarrow.parquet.ParquetFile``; :class:`ImportSourceError` when pyarrow is missing
    or the file is not Parquet."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportSourceError(f"{shown}: reading Parquet needs pyarrow (pip install 'spade-core[parquet]')") from None
    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise ImportSourceError(f"{shown}: not a readable Parquet file: {exc}") from None
    check_pages_against_footer(path, pf.metadata, shown)
    return pf


def check_pages_against_footer(path: Path, meta: Any, shown: str) -> None:
    """Refuse a file whose pages hold more than its footer says (:mod:`.parquet_pages`):
    every check of the footer trusts its values and sizes, and a reader decompresses each
    page to what the page's own header says. A footer claiming one value and 64 bytes over a
    page of 20 million values (1.1 KB of file) grew import's peak by 742 MB before."""
    from .parquet_pages import PageHeaderError, read_chunk_pages

    with path.open("rb") as handle:
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            for c in range(group.num_columns):
                chunk = group.column(c)
                offsets = [o for o in (chunk.dictionary_page_offset, chunk.data_page_offset) if o is not None and o > 0]
                where = f"{shown}: column {chunk.path_in_schema!r} (row group {g})"
                try:
                    pages = read_chunk_pages(handle, min(offsets, default=0), chunk.total_compressed_size)
                except (PageHeaderError, OSError) as exc:
                    raise ImportSourceError(f"{where}: its pages cannot be read: {exc}") from None
                if pages.values > chunk.num_values or pages.uncompressed_bytes > chunk.total_uncompressed_size:
                    raise ImportSourceError(
                        f"{where}: its pages hold {pages.values} values in {pages.uncompressed_bytes} bytes, "
                        f"more than the footer's {chunk.num_values} values in {chunk.total_uncompressed_size}; "
                        "refused as a decompression bomb")


def _decoded_sizes(arr: Any) -> Any:
    """What each element of the Arrow array ``arr`` costs once converted to Python objects
    (``to_pylist``), computed without converting: pointers, object headers and text (see
    :data:`PY_POINTER` and the others). Arrow's own sizes say too little: a list of a
    million structs of one boolean is 125 KB of bits and a few hundred bytes of a
    compressed file, and a million dicts (about 200 MB) once converted; a dictionary-encoded
    column shares one stored value among many rows, and converting pays for every row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = arr.type
    n = len(arr)

    def constant(width: int) -> Any:
        return pa.nulls(n, pa.int64()).fill_null(width)

    if pa.types.is_dictionary(t):
        return pc.take(_decoded_sizes(arr.dictionary), arr.indices).fill_null(PY_POINTER)
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        return pc.add(pc.binary_length(arr).cast(pa.int64()).fill_null(0), PY_TEXT)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        child = _decoded_sizes(arr.values)
        cum = pa.concat_arrays([pa.array([0], pa.int64()), pc.cumulative_sum(child).cast(pa.int64())])
        offsets = arr.offsets
        spans = pc.subtract(pc.take(cum, offsets.slice(1, n)), pc.take(cum, offsets.slice(0, n)))
        return pc.add(spans, PY_LIST)
    if pa.types.is_struct(t):
        total = constant(_dict_bytes(t.num_fields))
        for child in arr.flatten():
            total = pc.add(total, _decoded_sizes(child))
        return total
    if pa.types.is_null(t) or pa.types.is_boolean(t):
        return constant(PY_POINTER)
    try:
        width = max(t.bit_width // 8, 1)
    except ValueError:  # a type with no fixed width and no rule above: measured one by one
        return pa.array([PY_NUMBER + arr.slice(i, 1).nbytes for i in range(n)], pa.int64())
    return constant(PY_NUMBER + width)


def _row_sizes(columns: list[Any], n: int) -> list[int]:
    sizes = [_dict_bytes(len(columns))] * n
    for column in columns:
        sizes = [a + b for a, b in zip(sizes, _decoded_sizes(column).to_pylist(), strict=True)]
    return sizes


def iter_parquet_rows(
    pf: Any, shown: str, budget: DecodeBudget, columns: list[str] | None = None, *, row_limit: int = MAX_ROW_BYTES
) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """``(row index, row, None)`` for each row of the open Parquet file ``pf`` (only
    ``columns`` when given), or ``(index, None, reason)`` for a row over ``row_limit``
    bytes as Python objects or nested too deeply; whole-file problems (a bomb, a damaged
    file) raise :class:`ImportSourceError`. See the module docstring for the bounds: each
    batch's cost as Python objects is computed before any of it is converted, and charged
    to ``budget``."""
    check_parquet_metadata(pf, shown, budget, columns)
    index = 0
    try:
        batches = pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=columns, use_threads=False)
        for batch in batches:
            # Each row's cost as Python objects, before any of it is converted.
            sizes = _row_sizes(batch.columns, batch.num_rows)
            budget.charge(sum(sizes), shown)
            if max(sizes, default=0) <= row_limit:
                rows: list[Any] = batch.to_pylist()
            else:
                rows = [size if size > row_limit else batch.slice(i, 1).to_pylist()[0] for i, size in enumerate(sizes)]
            for row in rows:
                if isinstance(row, int):
                    yield index, None, f"row is {row} bytes decoded (the limit of one row is {row_limit})"
                else:
                    deep = nesting_error(row)
                    yield (index, None, f"row {deep}") if deep else (index, row, None)
                index += 1
    except ImportSourceError:
        raise
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise ImportSourceError(f"{shown}: not a readable Parquet file (at row {index}): {exc}") from None


__all__ = [
    "MAX_EXPANSION",
    "MAX_JSON_DEPTH",
    "MAX_JSON_DOCUMENT_BYTES",
    "MAX_ROW_BYTES",
    "MAX_SOURCE_BYTES",
    "PARQUET_BATCH_ROWS",
    "DecodeBudget",
    "ImportSourceError",
    "JSONNestingError",
    "JSONSyntaxError",
    "OutsideDataset",
    "check_pages_against_footer",
    "check_parquet_metadata",
    "dataset_root",
    "iter_json_array",
    "iter_json_lines",
    "iter_parquet_rows",
    "load_json",
    "nesting_error",
    "open_parquet",
    "read_text_bounded",
    "relative_inside",
    "resolve_inside",
]
