"""Corpora read from files: JSONL (the reference corpus format) and Parquet.

Both index their rows once when opened and sample a row uniformly. A row without the
text field, or whose text is not a non-empty string, is an error naming the file and the
line (or row) so the corpus can be fixed; nothing is skipped silently.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from spade_core.locations import json_error

from ..errors import CorpusError
from .base import Document


def _document(corpus: str, row: Any, *, text_field: str, id_field: str | None, title_field: str | None,
              default_id: str, where: str) -> Document:
    if not isinstance(row, dict):
        raise CorpusError(f"row is a {type(row).__name__}, expected an object", location=where)
    text = row.get(text_field)
    if not isinstance(text, str) or not text.strip():
        present = ", ".join(sorted(map(str, row))[:10]) or "none"
        raise CorpusError(
            f"field {text_field!r} is missing or not a non-empty string (fields present: {present})", location=where
        )
    doc_id = str(row[id_field]) if id_field and row.get(id_field) is not None else default_id
    title = row.get(title_field) if title_field else None
    return Document(corpus, doc_id, text, str(title) if title is not None else None)


class JsonlCorpus:
    """One JSON object per line with a text field (default ``"text"``)."""

    def __init__(self, path: str | Path, *, text_field: str = "text", id_field: str | None = "id",
                 title_field: str | None = "title", name: str = "jsonl") -> None:
        self.path = Path(path).expanduser()
        self.name = name
        self.text_field, self.id_field, self.title_field = text_field, id_field, title_field
        if not self.path.is_file():
            raise CorpusError("file does not exist", location=str(self.path))
        self._offsets: list[tuple[int, int]] = []  # (byte offset, line number) of non-blank lines
        offset = 0
        with self.path.open("rb") as fh:
            for lineno, line in enumerate(fh, 1):
                if line.strip():
                    self._offsets.append((offset, lineno))
                offset += len(line)
        if not self._offsets:
            raise CorpusError("no documents (the file is empty)", location=str(self.path))

    def __len__(self) -> int:
        return len(self._offsets)

    def get(self, index: int) -> Document:
        offset, lineno = self._offsets[index]
        where = f"{self.path}:{lineno}"
        with self.path.open("rb") as fh:
            fh.seek(offset)
            raw = fh.readline()
        try:
            row = json.loads(raw.rstrip(b"\r\n"))  # a place past the end stays on this line
        except json.JSONDecodeError as exc:
            raise CorpusError(f"not valid JSON: {json_error(exc, one_line=True)}", location=where) from None
        except UnicodeDecodeError as exc:
            raise CorpusError(f"not valid JSON: {exc}", location=where) from None
        return _document(self.name, row, text_field=self.text_field, id_field=self.id_field,
                         title_field=self.title_field, default_id=f"{self.path.name}:{lineno}", where=where)

    def sample(self, rng: random.Random) -> Document:
        return self.get(rng.randrange(len(self._offsets)))


class ParquetCorpus:
    """A Parquet file with a text column; rows are read one at a time."""

    def __init__(self, path: str | Path, *, text_field: str = "text", id_field: str | None = "id",
                 title_field: str | None = "title", name: str = "parquet") -> None:
        try:
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise CorpusError(f"pyarrow is needed for Parquet corpora ({exc})", location=str(path)) from None
        self.path = Path(path).expanduser()
        self.name = name
        self.text_field, self.id_field, self.title_field = text_field, id_field, title_field
        if not self.path.is_file():
            raise CorpusError("file does not exist", location=str(self.path))
        try:
            self._file = pq.ParquetFile(self.path)
        except Exception as exc:  # pyarrow raises ArrowInvalid and friends
            raise CorpusError(f"not a Parquet file: {exc}", location=str(self.path)) from None
        names = self._file.schema_arrow.names
        if text_field not in names:
            raise CorpusError(f"no column {text_field!r} (columns: {', '.join(names)})", location=str(self.path))
        self._columns = [c for c in (text_field, id_field, title_field) if c and c in names]
        self._groups = [self._file.metadata.row_group(i).num_rows for i in range(self._file.num_row_groups)]
        self._rows = sum(self._groups)
        if not self._rows:
            raise CorpusError("no documents (zero rows)", location=str(self.path))

    def __len__(self) -> int:
        return self._rows

    def get(self, index: int) -> Document:
        group, local = 0, index
        while local >= self._groups[group]:
            local -= self._groups[group]
            group += 1
        table = self._file.read_row_group(group, columns=self._columns)
        row = {c: table.column(c)[local].as_py() for c in self._columns}
        return _document(self.name, row, text_field=self.text_field, id_field=self.id_field,
                         title_field=self.title_field, default_id=f"{self.path.name}:{index}",
                         where=f"{self.path} row {index}")

    def sample(self, rng: random.Random) -> Document:
        return self.get(rng.randrange(self._rows))
