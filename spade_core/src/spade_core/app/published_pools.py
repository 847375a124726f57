"""Reading the layouts of the environment pools published on the Hugging Face Hub.

``spade import hf:...`` reads these when the folder is not a SPADE export
(:mod:`spade_core.app.hub`). A problem with the dataset as a whole (no list of environments,
a damaged Parquet file, no code column) raises :class:`~spade_core.app.dataset_files.ImportSourceError`
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
A row whose ``sha256`` does not match its code fails on its own, and so does any other
bad row or entry (a file outside the dataset, a row too large or nested too deeply, odd
types): the rest still import. Files are read only inside the dataset's folder, or
inside its cache repository's folder for a Hugging Face cache snapshot, whose files are
links into ``blobs/`` (:mod:`spade_core.app.dataset_files`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .dataset_files import (
    MAX_JSON_DOCUMENT_BYTES,
    MAX_SOURCE_BYTES,
    DecodeBudget,
    ImportSourceError,
    JSONSyntaxError,
    OutsideDataset,
    dataset_root,
    iter_json_array,
    iter_json_lines,
    iter_parquet_rows,
    load_json,
    open_parquet,
    read_text_bounded,
    relative_inside,
    resolve_inside,
)
from .import_rows import CODE_KEYS
from .import_sources import RawItem

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
        own = row.get("tags")
        if own is not None and not isinstance(own, list):
            return f"tags must be a list of strings, got {type(own).__name__}"
        row["tags"] = [*(own or []), *tags]
    return row


# --- manifest layout -----------------------------------------------------------------


def _entries(manifest: Path, root: Path) -> list[Any]:
    try:
        real = resolve_inside(manifest, root, MANIFEST)
        data = load_json(read_text_bounded(real, MAX_JSON_DOCUMENT_BYTES, MANIFEST), depth_limit=None)
    except OutsideDataset as exc:
        raise ImportSourceError(str(exc)) from None
    except (OSError, ValueError) as exc:
        raise ImportSourceError(f"{MANIFEST}: not readable JSON: {exc}") from None
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for key in LIST_KEYS:
            if isinstance(data.get(key), list):
                return data[key]
        raise ImportSourceError(
            f"{MANIFEST}: no list of environments (looked for a list, or a member named "
            f"{', '.join(LIST_KEYS)}; it has {', '.join(sorted(data)) or 'no members'})"
        )
    raise ImportSourceError(f"{MANIFEST}: must hold a list or an object, got {type(data).__name__}")


def _folder_name(value: Any) -> str | None:
    """``value`` when it is one plain folder name (a run, a generation), else ``None``."""
    if not isinstance(value, str) or not value or value in (".", "..") or "\x00" in value:
        return None
    return None if "/" in value or "\\" in value else value


def _is_file(path: Path, *, or_link: bool = False) -> bool:
    """``path.is_file()`` (or ``is_symlink()`` with ``or_link``: a link is checked where
    it leads later), ``False`` where the name cannot even be looked up (too long, ...)."""
    try:
        return path.is_file() or (or_link and path.is_symlink())
    except (OSError, ValueError):
        return False


def _quoted(value: str, limit: int = 100) -> str:
    """``repr(value)``, cut to about ``limit`` characters (a hostile entry's name can be any length)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def _locate(folder: Path, root: Path, entry: dict[str, Any], by_name: dict[str, list[Path]]) -> tuple[str, Path] | str:
    """The file an entry names, as ``(path inside the dataset, real path)``, or the reason
    it has none: a path must stay inside the dataset as written and once links are
    resolved (inside the cache repository for a Hugging Face cache snapshot)."""
    for key in PATH_KEYS:
        value = entry.get(key)
        if isinstance(value, str) and value:
            try:
                rel = relative_inside(value, key).as_posix()
                real = resolve_inside(folder / rel, root, f"{key} {_quoted(value)}")
            except OutsideDataset as exc:
                return f"{key} {_quoted(value)} points outside the dataset: {exc.reason}"
            return (rel, real) if _is_file(real) else f"{key} {_quoted(value)}: no such file in the dataset"
    name = next((entry[k] for k in FILE_KEYS if isinstance(entry.get(k), str) and entry[k]), None)
    if name is None:
        return f"the entry names no file (looked for {', '.join(PATH_KEYS + FILE_KEYS)})"
    if "/" in name or "\\" in name or "\x00" in name or name.startswith("."):
        return f"file name {_quoted(name)} must be a bare name"
    found: list[Path] = []
    for sub, key in (("environments", "source_run"), ("games", "generation")):
        run = _folder_name(entry.get(key))
        if run is not None and _is_file(folder / sub / run / name, or_link=True):
            found = [folder / sub / run / name]
            break
    if not found:
        found = by_name.get(name, [])
    if not found:
        return f"file {_quoted(name)} named by the manifest is not in the dataset"
    if len(found) > 1:
        return f"file name {_quoted(name)} is ambiguous ({len(found)} files); the entry needs a path"
    rel = found[0].relative_to(folder).as_posix()
    try:
        real = resolve_inside(found[0], root, rel)
    except OutsideDataset as exc:
        return str(exc)
    return (rel, real) if _is_file(real) else f"{rel}: not a file"


def _manifest_item(folder: Path, root: Path, i: int, entry: Any, by_name: dict[str, list[Path]]) -> RawItem:
    origin = f"{MANIFEST}#{i}"
    if not isinstance(entry, dict):
        return RawItem(origin, error=f"a manifest entry must be an object, got {type(entry).__name__}")
    where = _locate(folder, root, entry, by_name)
    if isinstance(where, str):
        return RawItem(origin, error=where)
    origin, real = where
    size = real.stat().st_size
    if size > MAX_SOURCE_BYTES:
        return RawItem(origin, error=f"code is {size} bytes (limit {MAX_SOURCE_BYTES})")
    try:
        code = read_text_bounded(real, MAX_SOURCE_BYTES, "the file")
    except (OSError, ValueError) as exc:
        return RawItem(origin, error=f"cannot read: {exc}")
    row = published_row(entry, code)
    return RawItem(origin, error=row) if isinstance(row, str) else RawItem(origin, row, infer_domain=True)


def read_manifest(folder: Path) -> list[RawItem]:
    """Every entry of ``folder/manifest.json`` as an item; an entry that cannot be used
    (no file, a file outside the dataset, odd values) is an item with its reason."""
    root = dataset_root(folder)
    entries = _entries(folder / MANIFEST, root)
    by_name: dict[str, list[Path]] = {}
    for p in sorted(folder.rglob("*.py")):
        if not any(part.startswith(".") for part in p.relative_to(folder).parts):
            by_name.setdefault(p.name, []).append(p)
    items = []
    for i, entry in enumerate(entries):
        try:
            items.append(_manifest_item(folder, root, i, entry, by_name))
        except (OSError, ValueError, TypeError, RecursionError) as exc:  # odd values: this entry's failure only
            items.append(RawItem(f"{MANIFEST}#{i}", error=f"unusable entry ({type(exc).__name__}: {exc})"))
    return items


# --- table layout --------------------------------------------------------------------


def _table_files(folder: Path) -> list[Path]:
    out = []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts) or not (p.is_file() or p.is_symlink()):
            continue
        if p.suffix in TABLE_SUFFIXES and p.name not in NOT_DATA:
            out.append(p)
    return out


Rows = Iterator[tuple[str, Any, "str | None"]]


def _json_lines(real: Path, rel: str) -> Rows:
    with real.open("rb") as handle:
        for lineno, row, error in iter_json_lines(handle):
            yield f"{rel}:{lineno}", row, error


def _read_rows(path: Path, rel: str, budget: DecodeBudget) -> tuple[list[str], Rows]:
    """The columns of a table file and its ``(origin, row, error)`` triples; whole-file
    problems raise. Rows are bounded (:mod:`spade_core.app.dataset_files`)."""
    if path.suffix == ".parquet":
        pf = open_parquet(path, rel)
        rows = ((f"{rel}#{i}", r, e) for i, r, e in iter_parquet_rows(pf, rel, budget))
        return pf.schema_arrow.names, rows
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ImportSourceError(f"{rel}: cannot read: {exc}") from None
    listed: list[tuple[str, Any, str | None]] | None = None
    text: str | None = None
    if path.suffix == ".json" and size <= MAX_JSON_DOCUMENT_BYTES:
        try:
            text = read_text_bounded(path, MAX_JSON_DOCUMENT_BYTES, rel)
        except OSError as exc:
            raise ImportSourceError(f"{rel}: cannot read: {exc}") from None
        except ValueError:
            text = None  # not UTF-8 as a whole: as JSON lines, each line is judged alone
    if text is not None:
        try:
            whole: Any = load_json(text, depth_limit=None)
        except JSONSyntaxError:
            whole = None  # JSON lines under a .json name, as some pools are written
        except ValueError:  # too deep to parse whole: a list is read element by element, else as lines
            whole = None
            try:
                listed = [(f"{rel}#{i}", r, e) for i, (r, e) in enumerate(iter_json_array(text))]
            except ValueError:
                listed = None
        if isinstance(whole, list):
            listed = [(f"{rel}#{i}", r, None) for i, r in enumerate(whole)]
        elif isinstance(whole, dict):
            lists = [v for v in whole.values() if isinstance(v, list)]
            if len(lists) != 1:
                raise ImportSourceError(f"{rel}: a JSON object must hold exactly one list of rows")
            listed = [(f"{rel}#{i}", r, None) for i, r in enumerate(lists[0])]
    if listed is None:
        try:
            listed = list(_json_lines(path, rel))
        except OSError as exc:
            raise ImportSourceError(f"{rel}: cannot read: {exc}") from None
    columns = sorted({k for _, r, _ in listed if isinstance(r, dict) for k in r})
    return columns, iter(listed)


def _table_item(origin: str, row: Any, error: str | None) -> RawItem:
    if error is not None:
        return RawItem(origin, error=error)
    if not isinstance(row, dict):
        return RawItem(origin, error=f"a row must be an object, got {type(row).__name__}")
    code = next((row[k] for k in CODE_KEYS if isinstance(row.get(k), str)), None)
    mapped = published_row(row, code) if code is not None else row
    if isinstance(mapped, str):
        return RawItem(origin, error=mapped)
    if code is not None:
        for k in CODE_KEYS:
            if k != "code":
                mapped.pop(k, None)
    return RawItem(origin, mapped, infer_domain=True)


def read_tables(folder: Path, files: list[Path]) -> list[RawItem]:
    """Every row of the table files ``files`` of ``folder``; a file that links out of the
    dataset is an item with its reason, a row that cannot be used another."""
    root = dataset_root(folder)
    inside: list[tuple[str, Path | None, str | None]] = []
    for path in files:
        rel = path.relative_to(folder).as_posix()
        try:
            inside.append((rel, resolve_inside(path, root, rel), None))
        except OutsideDataset as exc:
            inside.append((rel, None, exc.reason))
    budget = DecodeBudget.for_files(real for _, real, _ in inside if real is not None and real.suffix == ".parquet")
    items: list[RawItem] = []
    for rel, real, outside in inside:
        if real is None:
            items.append(RawItem(rel, error=outside))
            continue
        columns, rows = _read_rows(real, rel, budget)
        if not any(k in columns for k in CODE_KEYS):
            raise ImportSourceError(
                f"{rel}: missing column 'code' (looked for {', '.join(CODE_KEYS)}; "
                f"the file has {', '.join(columns) or 'no columns'})"
            )
        for origin, row, error in rows:
            try:
                items.append(_table_item(origin, row, error))
            except (ValueError, TypeError, RecursionError) as exc:  # odd values: this row's failure only
                items.append(RawItem(origin, error=f"unusable row ({type(exc).__name__}: {exc})"))
    return items


def read_published(folder: Path) -> list[RawItem]:
    """Every environment of a folder in a published layout (see the module docstring)."""
    if (folder / MANIFEST).is_file() or (folder / MANIFEST).is_symlink():
        return read_manifest(folder)
    files = _table_files(folder)
    if not files:
        raise ImportSourceError(
            f"{folder}: not a SPADE export (no README.md with a spade layout), no {MANIFEST}, "
            "and no .parquet, .jsonl or .json data files (a folder of .py files imports without hf:)"
        )
    return read_tables(folder, files)


__all__ = ["normalise_skill", "published_row", "read_manifest", "read_published", "read_tables"]
