"""Reading the layouts of the environment pools published on the Hugging Face Hub.

``spade import hf:...`` reads these when the folder is not a SPADE export
(:mod:`spade_core.hub`). A problem with the dataset as a whole (no list of environments,
a damaged Parquet file, no code column) raises :class:`~spade_core.importer.ImportSourceError`
before anything is imported; a bad entry or row is an item with its own error. Two layouts are known from the pools' dataset cards (org
``spade-rl``); what the cards leave open is handled by the aliases below (see
docs/hub.md for what was confirmed):

* **manifest**: ``manifest.json`` lists the environments and each lives in its own
  ``.py`` file (the pools generated during training: ``games/gen_<NNNN>/<file>.py`` with
  entries carrying ``path_in_dataset``, or ``environments/<source_run>/<file>.py`` with
  entries carrying ``source_run``). The manifest is a list of entries, or an object
  whose ``games`` / ``environments`` / ``envs`` / ``entries`` member is that list. An
  entry names its file by one of :data:`PATH_KEYS`, else by one of :data:`FILE_KEYS`
  looked up under its run's or generation's folder, else by a unique file name.
* **table**: rows in ``.parquet``, ``.jsonl`` or ``.json`` files (the fixed GPT-5.5
  pools: ``game_id``, ``file_name``, ``original_file_name``, ``skill``, ``sha256``,
  ``line_count``, ``byte_count``, ``code``). Any other column layout the importer's
  aliases understand (``code`` / ``env_code`` ..., ``skill``, ``metadata``) reads too.

Skills are written as the domains name them (``"Multi-Step Workflows"`` ->
``multi_step_workflows``; ``unlabelled`` is no skill); provenance (run, scale, recipe,
step, generation, the pool's ids) becomes tags ``key:value``; the domain, which the
pools do not record, is the one the code implies (boxed commands or a tool-use base).
A row whose ``sha256`` does not match its code fails on its own.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .importer import CODE_KEYS, MAX_SOURCE_BYTES, ImportSourceError, RawItem

MANIFEST = "manifest.json"
#: Manifest members that may hold the list of entries.
LIST_KEYS = ("games", "environments", "envs", "entries")
#: Entry keys holding the file's path inside the dataset, in order of preference.
PATH_KEYS = ("path_in_dataset", "path", "file_path", "relative_path")
#: Entry keys holding the bare file name.
FILE_KEYS = ("filename", "file_name", "file")
#: Provenance kept as ``key:value`` tags.
TAG_KEYS = (
    "game_id",
    "original_file_name",
    "source_run",
    "model_scale",
    "recipe",
    "generation",
    "step",
    "difficulty",
    "mean_reward",
    "solve_rate",
)
#: Keys the published layouts carry that say nothing an environment's metadata keeps
#: (file bookkeeping, checked hashes, flags of the capture).
DROPPED_KEYS = frozenset(
    {*PATH_KEYS, *FILE_KEYS, "sha256", "line_count", "byte_count", "has_hint", "reward_joined", "n_plays"}
)
#: Skill labels that mean "no skill".
NO_SKILL = frozenset({"", "unlabelled", "unlabeled", "none", "null", "unknown"})
#: Files of a snapshot that are never pools.
NOT_DATA = frozenset({"dataset_info.json", "dataset_infos.json", "state.json", MANIFEST})
TABLE_SUFFIXES = (".parquet", ".jsonl", ".json")


def normalise_skill(label: Any) -> str | None:
    """``"Multi-Step Workflows"`` -> ``"multi_step_workflows"``; ``None`` for no skill."""
    if not isinstance(label, str) or label.strip().lower() in NO_SKILL:
        return None
    return re.sub(r"[^a-z0-9]+", "_", label.strip().lower()).strip("_") or None


def published_row(entry: dict[str, Any], code: str) -> dict[str, Any] | str:
    """An entry of a published layout as a row the importer reads, or the reason it is unusable."""
    recorded = entry.get("sha256")
    if isinstance(recorded, str) and recorded:
        actual = hashlib.sha256(code.encode("utf-8")).hexdigest()
        if actual != recorded.lower():
            return f"sha256 {recorded[:12]}... recorded for this row does not match its code ({actual[:12]}...)"
    row: dict[str, Any] = {k: v for k, v in entry.items() if k not in DROPPED_KEYS and k not in TAG_KEYS}
    row["code"] = code
    skill = normalise_skill(entry.get("skill"))
    if skill is None:
        row.pop("skill", None)
    else:
        row["skill"] = skill
    tags = [f"{k}:{entry[k]}" for k in TAG_KEYS if entry.get(k) not in (None, "")]
    if tags:
        row["tags"] = list(row.get("tags") or []) + tags
    return row


# --- manifest layout -----------------------------------------------------------------


def _entries(manifest: Path) -> list[Any]:
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImportSourceError(f"{manifest.name}: not readable JSON: {exc}") from None
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for key in LIST_KEYS:
            if isinstance(data.get(key), list):
                return data[key]
        raise ImportSourceError(
            f"{manifest.name}: no list of environments (looked for a list, or a member named "
            f"{', '.join(LIST_KEYS)}; it has {', '.join(sorted(data)) or 'no members'})"
        )
    raise ImportSourceError(f"{manifest.name}: must hold a list or an object, got {type(data).__name__}")


def _locate(folder: Path, entry: dict[str, Any], by_name: dict[str, list[Path]]) -> Path | str:
    for key in PATH_KEYS:
        value = entry.get(key)
        if isinstance(value, str) and value:
            path = (folder / value).resolve()
            if not path.is_relative_to(folder.resolve()):
                return f"{key} {value!r} points outside the dataset"
            return path if path.is_file() else f"{key} {value!r}: no such file in the dataset"
    name = next((entry[k] for k in FILE_KEYS if isinstance(entry.get(k), str) and entry[k]), None)
    if name is None:
        return f"the entry names no file (looked for {', '.join(PATH_KEYS + FILE_KEYS)})"
    if "/" in name or name.startswith("."):
        return f"file name {name!r} must be a bare name"
    for sub, key in (("environments", "source_run"), ("games", "generation")):
        if isinstance(entry.get(key), str):
            candidate = folder / sub / entry[key] / name
            if candidate.is_file():
                return candidate
    found = by_name.get(name, [])
    if len(found) == 1:
        return found[0]
    if not found:
        return f"file {name!r} named by the manifest is not in the dataset"
    return f"file name {name!r} is ambiguous ({len(found)} files); the entry needs a path"


def read_manifest(folder: Path) -> list[RawItem]:
    entries = _entries(folder / MANIFEST)
    root = folder.resolve()
    by_name: dict[str, list[Path]] = {}
    for p in sorted(folder.rglob("*.py")):
        if not any(part.startswith(".") for part in p.relative_to(folder).parts):
            by_name.setdefault(p.name, []).append(p)
    items = []
    for i, entry in enumerate(entries):
        origin = f"{MANIFEST}#{i}"
        if not isinstance(entry, dict):
            items.append(RawItem(origin, error=f"a manifest entry must be an object, got {type(entry).__name__}"))
            continue
        where = _locate(folder, entry, by_name)
        if isinstance(where, str):
            items.append(RawItem(origin, error=where))
            continue
        where = where.resolve()
        origin = where.relative_to(root).as_posix()
        if where.stat().st_size > MAX_SOURCE_BYTES:
            items.append(RawItem(origin, error=f"code is {where.stat().st_size} bytes (limit {MAX_SOURCE_BYTES})"))
            continue
        try:
            code = where.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            items.append(RawItem(origin, error=f"cannot read: {exc}"))
            continue
        row = published_row(entry, code)
        items.append(RawItem(origin, error=row) if isinstance(row, str) else RawItem(origin, row, infer_domain=True))
    return items


# --- table layout --------------------------------------------------------------------


def _table_files(folder: Path) -> list[Path]:
    out = []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts) or not p.is_file():
            continue
        if p.suffix in TABLE_SUFFIXES and p.name not in NOT_DATA:
            out.append(p)
    return out


def _read_rows(path: Path, rel: str) -> tuple[list[str], Iterator[tuple[str, Any]]]:
    """The columns of a table file and its ``(origin, row)`` pairs; whole-file problems raise."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several types for a damaged file
            raise ImportSourceError(f"{rel}: not a readable Parquet file: {exc}") from None
        return table.column_names, ((f"{rel}#{i}", r) for i, r in enumerate(table.to_pylist()))
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportSourceError(f"{rel}: cannot read: {exc}") from None
    rows: list[tuple[str, Any]] = []
    whole: Any = None
    if path.suffix == ".json":
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            whole = None  # JSON lines under a .json name, as some pools are written
    if isinstance(whole, list):
        rows = [(f"{rel}#{i}", r) for i, r in enumerate(whole)]
    elif isinstance(whole, dict):
        lists = [v for v in whole.values() if isinstance(v, list)]
        if len(lists) != 1:
            raise ImportSourceError(f"{rel}: a JSON object must hold exactly one list of rows")
        rows = [(f"{rel}#{i}", r) for i, r in enumerate(lists[0])]
    else:
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append((f"{rel}:{lineno}", json.loads(line)))
            except json.JSONDecodeError as exc:
                rows.append((f"{rel}:{lineno}", f"malformed JSON: {exc.msg} at column {exc.colno}"))
    columns = sorted({k for _, r in rows if isinstance(r, dict) for k in r})
    return columns, iter(rows)


def read_tables(folder: Path, files: list[Path]) -> list[RawItem]:
    items: list[RawItem] = []
    for path in files:
        rel = path.relative_to(folder).as_posix()
        columns, rows = _read_rows(path, rel)
        if not any(k in columns for k in CODE_KEYS):
            raise ImportSourceError(
                f"{rel}: missing column 'code' (looked for {', '.join(CODE_KEYS)}; "
                f"the file has {', '.join(columns) or 'no columns'})"
            )
        for origin, row in rows:
            if isinstance(row, str):
                items.append(RawItem(origin, error=row))
            elif not isinstance(row, dict):
                items.append(RawItem(origin, error=f"a row must be an object, got {type(row).__name__}"))
            else:
                code = next((row[k] for k in CODE_KEYS if isinstance(row.get(k), str)), None)
                mapped = published_row(row, code) if code is not None else row
                if isinstance(mapped, str):
                    items.append(RawItem(origin, error=mapped))
                else:
                    if code is not None:
                        for k in CODE_KEYS:
                            if k != "code":
                                mapped.pop(k, None)
                    items.append(RawItem(origin, mapped, infer_domain=True))
    return items


def read_published(folder: Path) -> list[RawItem]:
    """Every environment of a folder in a published layout (see the module docstring)."""
    if (folder / MANIFEST).is_file():
        return read_manifest(folder)
    files = _table_files(folder)
    if not files:
        raise ImportSourceError(
            f"{folder}: not a SPADE export (no README.md with a spade layout), no {MANIFEST}, "
            "and no .parquet, .jsonl or .json data files (a folder of .py files imports without hf:)"
        )
    return read_tables(folder, files)


__all__ = ["normalise_skill", "published_row", "read_manifest", "read_published", "read_tables"]
