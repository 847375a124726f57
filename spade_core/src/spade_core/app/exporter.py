"""Writing store environments out in the formats ``spade import`` reads back.

* ``jsonl``: one object per line: ``code``, the flat columns published pools use
  (``name``, ``domain``, ``skill``, ``description``) and the full metadata document under
  ``metadata``;
* ``parquet``: the same columns, ``metadata`` as a JSON string;
* ``dir``: ``<id>.py`` with its metadata document in ``<id>.json`` next to it.

Import reads the ``metadata`` document when present, so export -> import reproduces
names, versions, status, lineage, validation and stats. Nothing existing is overwritten
unless asked (``overwrite=True``), and a file is written under a temporary name and moved
into place, so an interrupted export never leaves a half file under the real name.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import SpadeError
from ..metadata import EnvMetadata, EnvStatus
from .file_writes import write_inside

if TYPE_CHECKING:
    from ..store import EnvStore

ExportFormat = Literal["jsonl", "parquet", "dir"]
FORMATS: tuple[str, ...] = ("jsonl", "parquet", "dir")
#: Rows read from the store per query.
PAGE = 500


class ExportError(SpadeError):
    """The export target cannot be written (exists, wrong format, missing pyarrow)."""


def infer_format(path: Path) -> ExportFormat:
    if path.suffix == ".jsonl":
        return "jsonl"
    if path.suffix == ".parquet":
        return "parquet"
    if path.suffix:
        raise ExportError(f"{path}: cannot tell the format from {path.suffix!r}; pass --format jsonl|parquet|dir")
    return "dir"


def iter_envs(
    store: EnvStore,
    *,
    domain: str | None = None,
    skill: str | None = None,
    status: EnvStatus | None = None,
) -> Iterator[tuple[str, EnvMetadata]]:
    """``(source, metadata)`` of every matching store environment, paged."""
    offset = 0
    while True:
        page = store.find(domain=domain, skill=skill, status=status, limit=PAGE, offset=offset)
        for meta in page:
            yield store.get_source(meta.id), meta
        if len(page) < PAGE:
            return
        offset += PAGE


def export_row(source: str, meta: EnvMetadata) -> dict[str, Any]:
    """One exported environment as a JSON-ready row."""
    return {
        "code": source,
        "name": meta.name,
        "domain": meta.domain,
        "skill": meta.skill,
        "description": meta.description,
        "metadata": meta.model_dump(mode="json"),
    }


def _check_target(path: Path, fmt: ExportFormat, overwrite: bool) -> None:
    if fmt == "dir":
        if path.exists() and not path.is_dir():
            raise ExportError(f"{path} exists and is not a folder")
        if path.is_dir() and any(path.iterdir()) and not overwrite:
            raise ExportError(f"{path} is not empty; pass --force to write into it")
    elif path.exists() and not overwrite:
        raise ExportError(f"{path} exists; pass --force to replace it")
    if fmt != "dir" and not path.parent.is_dir():
        raise ExportError(f"{path.parent} does not exist")


def export_envs(
    envs: Iterator[tuple[str, EnvMetadata]],
    path: str | Path,
    fmt: ExportFormat | None = None,
    *,
    overwrite: bool = False,
    on_item: Callable[[EnvMetadata], None] | None = None,
) -> int:
    """Write ``envs`` to ``path``; returns how many were written."""
    target = Path(path)
    fmt = fmt or infer_format(target)
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r} (use {', '.join(FORMATS)})")
    _check_target(target, fmt, overwrite)
    if fmt == "dir":
        return _export_dir(envs, target, on_item)
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ExportError("writing Parquet needs pyarrow (pip install 'spade-core[parquet]')") from None
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        n = _export_jsonl(envs, tmp, on_item) if fmt == "jsonl" else _export_parquet(envs, tmp, on_item)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return n


def _export_jsonl(envs: Iterator[tuple[str, EnvMetadata]], tmp: Path, on_item: Callable[[EnvMetadata], None] | None) -> int:
    n = 0
    with tmp.open("w", encoding="utf-8") as fh:
        for source, meta in envs:
            fh.write(json.dumps(export_row(source, meta), ensure_ascii=False) + "\n")
            n += 1
            if on_item:
                on_item(meta)
    return n


def _export_parquet(
    envs: Iterator[tuple[str, EnvMetadata]], tmp: Path, on_item: Callable[[EnvMetadata], None] | None
) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [(c, pa.string()) for c in ("code", "name", "domain", "skill", "description", "metadata")]
    )
    n = 0
    with pq.ParquetWriter(tmp, schema) as writer:
        batch: list[dict[str, Any]] = []
        for source, meta in envs:
            row = export_row(source, meta)
            row["metadata"] = json.dumps(row["metadata"], ensure_ascii=False)
            batch.append(row)
            n += 1
            if on_item:
                on_item(meta)
            if len(batch) >= PAGE:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch = []
        if batch or n == 0:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    return n


def _export_dir(envs: Iterator[tuple[str, EnvMetadata]], target: Path, on_item: Callable[[EnvMetadata], None] | None) -> int:
    n = 0
    for source, meta in envs:
        for suffix, text in ((".py", source), (".json", meta.model_dump_json(indent=2))):
            write_inside(target, f"{meta.id}{suffix}", text)  # through no link planted in the folder
        n += 1
        if on_item:
            on_item(meta)
    return n


__all__ = ["FORMATS", "ExportError", "ExportFormat", "export_envs", "export_row", "infer_format", "iter_envs"]
