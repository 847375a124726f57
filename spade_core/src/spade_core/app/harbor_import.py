"""Reading Harbor tasks back (``spade import harbor:DIR``): :func:`read_harbor_items` turns
a task, or a folder of tasks, of layout 1 or 2 into the importer's
:class:`~spade_core.app.import_sources.RawItem`, so they take the one ``prepare`` /
``import_items`` path, status rules included; a task that is not of our kind, or is
damaged, is a failed item naming the task and the reason. What a task holds is
:mod:`.harbor`'s docstring."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from .dataset_files import (
    MAX_ROW_BYTES,
    MAX_SOURCE_BYTES,
    ImportSourceError,
    JSONNestingError,
    JSONSyntaxError,
    OutsideDataset,
    dataset_root,
    load_json,
    read_text_bounded,
    resolve_inside,
)
from .harbor_episode import HarborError
from .import_sources import RawItem

#: ``[metadata.spade] kind`` of the tasks :mod:`.harbor` writes and this module reads.
TASK_KIND = "gym"
#: Where each layout keeps the full metadata document (what import reads back).
METADATA_PATHS = {1: "environment/spade/metadata.json", 2: "tests/spade/metadata.json"}
#: Largest ``task.toml`` read.
MAX_CONFIG_BYTES = 1_000_000
#: ``[metadata.spade]`` fields checked against the metadata document on import.
SUMMARY_FIELDS = ("id", "name", "version", "domain", "skill", "code_hash", "action_format", "max_turns", "reward_range")
HARBOR_PREFIX = "harbor:"


def is_harbor_ref(text: str) -> bool:
    return text.startswith(HARBOR_PREFIX)


def harbor_path(text: str) -> Path:
    """The folder ``harbor:DIR`` names."""
    body = text[len(HARBOR_PREFIX) :].strip()
    if not body:
        raise ImportSourceError("harbor: needs a folder: harbor:DIR (a Harbor task, or a folder of tasks)")
    return Path(body).expanduser()


def task_folders(path: Path) -> list[Path]:
    """The task folders ``harbor:DIR`` names: ``path`` itself when it holds ``task.toml``,
    else its sub-folders (hidden ones left out), sorted."""
    if not path.exists():
        raise ImportSourceError(f"{path}: no such folder")
    if not path.is_dir():
        raise ImportSourceError(f"{path}: harbor: takes a folder (a Harbor task, or a folder of tasks)")
    if (path / "task.toml").exists() or (path / "task.toml").is_symlink():
        return [path]
    subs = sorted(p for p in path.iterdir() if not p.name.startswith(".") and (p.is_dir() or p.is_symlink()))
    if not subs:
        raise ImportSourceError(f"{path}: no Harbor task here (no task.toml, and no task folders)")
    return subs


def read_harbor_items(path: str | Path) -> list[RawItem]:
    """Every task under ``path`` as a :class:`RawItem` (``error`` set, naming the task and
    the problem, for anything that is not a readable task of our kind)."""
    path = Path(path)
    folders = task_folders(path)
    root = dataset_root(path)
    return [_read_task(folder, root) for folder in folders]


def _read_task(folder: Path, root: Path) -> RawItem:
    """One task as an item: whatever its files hold, a problem is this task's outcome only."""
    name = folder.name
    try:
        return RawItem(name, _task_row(folder, root), from_file=True)
    except HarborError as exc:
        return RawItem(name, error=str(exc), from_file=True)
    except RecursionError:
        return RawItem(name, error="a file of the task is nested too deeply to read", from_file=True)
    except Exception as exc:  # odd data a check of _task_row missed: still this task's alone
        return RawItem(name, error=f"unreadable task ({type(exc).__name__}: {exc})", from_file=True)


def _read(folder: Path, rel: str, root: Path, limit: int) -> str:
    path = folder / rel
    if not (path.exists() or path.is_symlink()):
        raise HarborError(f"{rel} is missing")
    try:
        real = resolve_inside(path, root, rel)
    except OutsideDataset as exc:
        raise HarborError(str(exc)) from None
    if not real.is_file():
        raise HarborError(f"{rel} is not a file")
    try:
        return read_text_bounded(real, limit, rel)
    except (OSError, ValueError) as exc:
        raise HarborError(f"cannot read {rel}: {exc}") from None


def _task_row(folder: Path, root: Path) -> dict[str, Any]:
    try:
        real = resolve_inside(folder, root, folder.name)
    except OutsideDataset as exc:
        raise HarborError(exc.reason) from None
    if not real.is_dir():
        raise HarborError("not a folder, so not a Harbor task")
    if not (folder / "task.toml").exists() and not (folder / "task.toml").is_symlink():
        raise HarborError("no task.toml: not a Harbor task")
    text = _read(folder, "task.toml", root, MAX_CONFIG_BYTES)
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise HarborError(f"task.toml is not valid TOML: {exc}") from None
    except RecursionError:
        raise HarborError("task.toml is nested too deeply to read") from None
    metadata = config.get("metadata")
    summary = metadata.get("spade") if isinstance(metadata, dict) else None
    if not isinstance(summary, dict) or summary.get("kind") != TASK_KIND:
        kind = summary.get("kind") if isinstance(summary, dict) else None
        what = f"[metadata.spade] kind is {kind!r}" if kind is not None else "task.toml has no [metadata.spade] table"
        raise HarborError(f"not a SPADE gym task ({what}; spade import reads the tasks spade export --to-harbor writes)")
    layout = summary.get("layout")
    meta_rel = METADATA_PATHS.get(layout) if isinstance(layout, int) and not isinstance(layout, bool) else None
    if meta_rel is None:
        raise HarborError(f"[metadata.spade] layout is {layout!r}; this SPADE reads layouts "
                          f"{', '.join(map(str, METADATA_PATHS))}")
    code = _read(folder, "environment/spade/env.py", root, MAX_SOURCE_BYTES)
    meta_text = _read(folder, meta_rel, root, MAX_ROW_BYTES)
    try:
        document = load_json(meta_text)
    except JSONSyntaxError as exc:
        raise HarborError(f"{meta_rel} is not valid JSON: {exc}") from None
    except (JSONNestingError, ValueError) as exc:
        raise HarborError(f"{meta_rel} is JSON {exc}") from None
    if not isinstance(document, dict) or "schema_version" not in document:
        raise HarborError(f"{meta_rel} is not a SPADE metadata document")
    for key in SUMMARY_FIELDS:
        recorded, documented = summary.get(key), document.get(key)
        same = _same_range(recorded, documented) if key == "reward_range" else recorded == documented
        if not same:
            raise HarborError(
                f"task.toml's [metadata.spade] {key} ({recorded!r}) differs from {meta_rel} "
                f"({documented!r}); was one of them edited?"
            )
    return {**document, "code": code}


def _same_range(recorded: Any, documented: Any) -> bool:
    """Whether two reward ranges are the same numbers (anything but two lists of numbers
    is not)."""
    def numbers(value: Any) -> list[float] | None:
        if not isinstance(value, list) or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in value):
            return None
        return [float(x) for x in value]

    a, b = numbers(recorded), numbers(documented)
    return a is not None and a == b
