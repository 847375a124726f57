"""The export layout of ``spade export --to-hub`` (``spade-envs``, version :data:`LAYOUT_VERSION`):
its columns, rows, dataset card, and writing and reading a folder in it.

A dataset repository in this layout holds:

* ``data/<split>-00000-of-00001.parquet``: one row per environment, the columns of
  :data:`COLUMNS` (written by ``datasets``); split ``train`` holds the store's
  environments, split ``seeds`` (only on request) the installed plugins' seeds;
* ``README.md``: the dataset card. Its YAML front matter declares the splits'
  ``data_files`` and features (what the Hub's viewer and ``datasets.load_dataset`` read)
  and a ``spade`` block naming the layout and its version; its text states the schema.

The ``metadata`` column holds the full :class:`~spade_core.metadata.EnvMetadata`
document as JSON and is what import reads, so export -> import reproduces names,
versions, status, lineage, validation, stats and hints; the other columns repeat parts
of it flat for the viewer and for filtering with ``datasets``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import SpadeError
from ..metadata import EnvMetadata, identity
from ..names import SCHEMA_VERSION
from .dataset_files import (
    DecodeBudget,
    ImportSourceError,
    OutsideDataset,
    dataset_root,
    iter_parquet_rows,
    open_parquet,
    read_text_bounded,
    relative_inside,
    resolve_inside,
)
from .import_sources import RawItem

LAYOUT = "spade-envs"
LAYOUT_VERSION = 1
#: Splits of an export, in order: store environments, then seeds (on request).
SPLITS = ("train", "seeds")
INSTALL_HINT = "pip install 'spade-core[hub]'"
#: What reading a folder in this layout needs (writing needs ``datasets`` too): a
#: program that only imports exports, such as a Space (spade_serve.space), installs these.
READ_REQUIREMENTS = ("pyarrow>=14", "huggingface_hub>=0.30")


class HubError(SpadeError):
    """A Hub reference, download, upload or dataset layout problem; the message says which."""


@dataclass(frozen=True)
class Column:
    name: str
    #: The ``datasets`` feature: a dtype name, or ``list[string]``.
    dtype: str
    description: str


#: The export's columns, in order (also the schema table of the card and docs/hub.md).
COLUMNS: tuple[Column, ...] = (
    Column("id", "string", "`<name>-v<version>`, unique in the dataset"),
    Column("name", "string", "environment name (the Gymnasium id is `spade/<id>`)"),
    Column("version", "int32", "version of the name, from 1"),
    Column("domain", "string", "domain plugin that runs it (`games`, `tooluse`, ...)"),
    Column("skill", "string", "skill the environment trains"),
    Column("status", "string", "`candidate`, `admitted` or `retired` (seeds: `admitted`)"),
    Column("action_format", "string", "`boxed` or `tool_call`"),
    Column("description", "string", "what the environment is about"),
    Column("code", "string", "the environment's Python source"),
    Column("code_hash", "string", "sha256 of the UTF-8 source with line endings normalised to LF"),
    Column("parent_ids", "list[string]", "lineage: ids of the environments it was made from"),
    Column("hint", "string", "privileged hint appended to the first observation (null: none)"),
    Column("validation_passed", "bool", "outcome of the validation pipeline (null: not validated)"),
    Column("validation_failed_stage", "string", "stage that rejected it (null when passed or not validated)"),
    Column("win_rate", "float64", "latest measured win rate (null: never played)"),
    Column("regret", "float64", "latest measured regret (null: not measured)"),
    Column("samples", "int64", "plays behind the latest statistics (null: never played)"),
    Column("metadata", "string", "the full EnvMetadata document as JSON (authoritative on import)"),
)
REQUIRED_COLUMNS = ("code", "metadata")


# --- rows and the dataset ------------------------------------------------------------


def hub_row(source: str, meta: EnvMetadata) -> dict[str, Any]:
    """One environment as a row of :data:`COLUMNS`."""
    latest = meta.latest_stats
    report = meta.validation
    return {
        **identity(meta),
        "status": meta.status.value,
        "action_format": meta.action_format.value,
        "description": meta.description,
        "code": source,
        "code_hash": meta.code_hash,
        "parent_ids": list(meta.parent_ids),
        "hint": meta.hint,
        "validation_passed": None if report is None else report.passed,
        "validation_failed_stage": None if report is None else report.failed_stage,
        "win_rate": None if latest is None else latest.win_rate,
        "regret": None if latest is None else latest.regret,
        "samples": None if latest is None else latest.samples,
        "metadata": meta.model_dump_json(),
    }


def _datasets() -> Any:
    try:
        import datasets
    except ImportError:
        raise HubError(f"Hub export needs the datasets library ({INSTALL_HINT})") from None
    return datasets


def features() -> Any:
    """:data:`COLUMNS` as ``datasets.Features``."""
    ds = _datasets()
    out = {}
    for c in COLUMNS:
        out[c.name] = ds.List(ds.Value("string")) if c.dtype == "list[string]" else ds.Value(c.dtype)
    return ds.Features(out)


def build_dataset_dict(splits: dict[str, Iterable[tuple[str, EnvMetadata]]]) -> Any:
    """A ``datasets.DatasetDict`` with one split per entry of ``splits`` (rows of :func:`hub_row`)."""
    ds = _datasets()
    feats = features()
    built = {}
    for split, envs in splits.items():
        rows = [hub_row(source, meta) for source, meta in envs]
        if rows:
            built[split] = ds.Dataset.from_list(rows, features=feats)
        else:
            built[split] = ds.Dataset.from_dict({c.name: [] for c in COLUMNS}, features=feats)
    return ds.DatasetDict(built)


def _data_file(split: str) -> str:
    return f"data/{split}-00000-of-00001.parquet"


def schema_table() -> str:
    """The markdown table of :data:`COLUMNS` (card and docs)."""
    lines = ["| column | type | meaning |", "|---|---|---|"]
    lines += [f"| `{c.name}` | {c.dtype} | {c.description} |" for c in COLUMNS]
    return "\n".join(lines)


def dataset_card(dataset_dict: Any, *, pretty_name: str | None = None) -> str:
    """The README.md of an export: YAML front matter (configs, features, the ``spade``
    block) and a text stating the layout, its version and the schema."""
    from datasets.info import DatasetInfo, DatasetInfosDict
    from datasets.splits import SplitDict, SplitInfo
    from huggingface_hub import DatasetCard, DatasetCardData

    splits = list(dataset_dict)
    counts = {s: len(dataset_dict[s]) for s in splits}
    info = DatasetInfo(features=features())
    info.splits = SplitDict()
    for s in splits:
        info.splits.add(SplitInfo(name=s, num_examples=counts[s], num_bytes=dataset_dict[s].data.nbytes))
    card_data = DatasetCardData(
        pretty_name=pretty_name or "SPADE environments",
        tags=["spade", "rl-environments", "text-environments", "gymnasium"],
        task_categories=["reinforcement-learning"],
        configs=[{"config_name": "default", "data_files": [{"split": s, "path": _data_file(s)} for s in splits]}],
        spade={
            "layout": LAYOUT,
            "layout_version": LAYOUT_VERSION,
            "metadata_schema_version": SCHEMA_VERSION,
            "spade_core_version": __version__,
            "exported_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    )
    DatasetInfosDict({"default": info}).to_dataset_card_data(card_data)
    total = ", ".join(f"{counts[s]} in `{s}`" for s in splits)
    body = f"""
# {pretty_name or "SPADE environments"}

Executable text environments exported by SPADE's `spade export --to-hub` ({total}). Layout `{LAYOUT}` version {LAYOUT_VERSION}; the `metadata`
column follows EnvMetadata schema version {SCHEMA_VERSION}.

## Using it

```bash
spade import hf:<this repository>                    # candidates; add --status admitted to validate
spade import hf:<this repository>@<revision> --status admitted
```

or read the rows with `datasets.load_dataset("<this repository>")`. The code is
untrusted: SPADE runs it in its sandbox, and `--status admitted` runs every row through
the validation pipeline before admitting it.

## Splits

- `train`: the exported store's environments;
- `seeds`: the seed environments of the plugins installed at export time (present only
  when exported with `--include-seeds`).

## Schema

One row per environment:

{schema_table()}

Import reads `code` and `metadata`; the other columns repeat parts of `metadata` for
the viewer and for filtering.
"""
    card = DatasetCard("---\n" + card_data.to_yaml() + "\n---\n" + body)
    return str(card)


# --- writing and reading a folder ------------------------------------------------


@dataclass(frozen=True)
class HubExport:
    """What an export wrote: the folder and the rows per split."""

    folder: Path
    counts: dict[str, int]
    url: str | None = None


def write_hub_folder(
    envs: Iterable[tuple[str, EnvMetadata]],
    target: str | Path,
    *,
    seeds: Iterable[tuple[str, EnvMetadata]] | None = None,
    overwrite: bool = False,
    pretty_name: str | None = None,
) -> HubExport:
    """Write the export layout to the folder ``target``, whole or not at all: it is built
    in a temporary folder beside ``target`` and moved into place. A non-empty ``target``
    is replaced only with ``overwrite``."""
    target = Path(target)
    if target.exists() and not target.is_dir():
        raise HubError(f"{target} exists and is not a folder")
    if target.is_dir() and any(target.iterdir()) and not overwrite:
        raise HubError(f"{target} is not empty; pass --force to replace it")
    if not target.parent.is_dir():
        raise HubError(f"{target.parent} does not exist")
    splits: dict[str, Iterable[tuple[str, EnvMetadata]]] = {"train": envs}
    if seeds is not None:
        splits["seeds"] = seeds
    dd = build_dataset_dict(splits)
    from datasets import utils as ds_utils

    bars_were_on = not ds_utils.are_progress_bars_disabled()
    ds_utils.disable_progress_bars()  # the command shows its own summary
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        (tmp / "data").mkdir()
        for split in dd:
            dd[split].to_parquet(str(tmp / _data_file(split)))
        (tmp / "README.md").write_text(dataset_card(dd, pretty_name=pretty_name), encoding="utf-8")
        if target.exists():
            old = target.with_name(f".{target.name}.old-{os.getpid()}")
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if bars_were_on:
            ds_utils.enable_progress_bars()
    return HubExport(target, {s: len(dd[s]) for s in dd})


#: Largest dataset card read (its YAML header and text).
MAX_CARD_BYTES = 16 * 1024 * 1024


def card_metadata(folder: Path) -> dict[str, Any] | None:
    """The YAML front matter of ``folder/README.md`` (``None`` without a card). The card
    is read only inside the dataset (:func:`~spade_core.app.dataset_files.dataset_root`)."""
    readme = folder / "README.md"
    if not (readme.is_file() or readme.is_symlink()):
        return None
    from huggingface_hub import DatasetCard

    try:
        text = read_text_bounded(resolve_inside(readme, dataset_root(folder), str(readme)), MAX_CARD_BYTES, str(readme))
        card = DatasetCard(text)
    except OutsideDataset as exc:
        raise HubError(str(exc)) from None
    except Exception as exc:  # the library raises ValueError / yaml errors for a malformed header
        raise HubError(f"{readme}: the dataset card's YAML header cannot be read: {exc}") from None
    data = card.data.to_dict()
    return data if isinstance(data, dict) else None


def read_spade_layout(folder: Path, meta: dict[str, Any]) -> list[RawItem]:
    """Every row of an export (:data:`COLUMNS`), checked as a whole first: a layout
    newer than this version, a missing data file or one outside the dataset, an
    unreadable Parquet file, a decompression bomb or a missing column raises
    :class:`HubError` before any row is returned. Rows are decoded a few at a time, only
    the columns import reads (:func:`~spade_core.app.dataset_files.iter_parquet_rows`)."""
    spade = meta.get("spade") or {}
    version = spade.get("layout_version")
    if not isinstance(version, int) or version < 1:
        raise HubError(f"{folder / 'README.md'}: spade.layout_version must be a positive integer, got {version!r}")
    if version > LAYOUT_VERSION:
        raise HubError(
            f"{folder}: layout {LAYOUT} version {version} is newer than this SPADE reads ({LAYOUT_VERSION}); "
            "upgrade spade-core"
        )
    files = list(_split_files(folder, meta))
    budget = DecodeBudget.for_files(real for _, _, real in files)
    items: list[RawItem] = []
    for split, rel, real in files:
        try:
            pf = open_parquet(real, rel)
            names = pf.schema_arrow.names
            missing = [c for c in REQUIRED_COLUMNS if c not in names]
            if missing:
                raise HubError(
                    f"{rel}: missing column {', '.join(map(repr, missing))} (layout {LAYOUT} v{version} needs "
                    f"{', '.join(REQUIRED_COLUMNS)}; the file has {', '.join(names) or 'none'})"
                )
            for i, row, error in iter_parquet_rows(pf, rel, budget, columns=list(REQUIRED_COLUMNS)):
                items.append(RawItem(f"{split}#{i}", row or {}, error=error))
        except ImportSourceError as exc:
            raise HubError(str(exc)) from None
    return items


def _split_files(folder: Path, meta: dict[str, Any]) -> Iterator[tuple[str, str, Path]]:
    """``(split, path shown, real path)`` of each data file the card declares; a pattern
    that is absolute or climbs out with ``..``, or a file that links out of the dataset,
    raises :class:`HubError`."""
    configs = meta.get("configs") or []
    default = next((c for c in configs if isinstance(c, dict) and c.get("config_name") == "default"), None)
    if default is None:
        raise HubError(f"{folder / 'README.md'}: the card declares no 'default' config with data_files")
    entries = default.get("data_files") or []
    if not isinstance(entries, list) or not entries:
        raise HubError(f"{folder / 'README.md'}: the 'default' config lists no data_files")
    root = dataset_root(folder)
    for entry in entries:
        split, pattern = (entry.get("split"), entry.get("path")) if isinstance(entry, dict) else (None, None)
        if not isinstance(split, str) or not isinstance(pattern, str) or not pattern:
            raise HubError(f"{folder / 'README.md'}: a data_files entry needs 'split' and 'path', got {entry!r}")
        try:
            relative_inside(pattern, f"split {split!r} names data file")
            matches = sorted(m for m in folder.glob(pattern) if m.is_file() or m.is_symlink())
        except OutsideDataset as exc:
            raise HubError(f"{folder / 'README.md'}: {exc}") from None
        except (ValueError, NotImplementedError) as exc:
            raise HubError(f"{folder / 'README.md'}: split {split!r} names {pattern!r}, not a usable pattern ({exc})") from None
        if not matches:
            raise HubError(f"{folder}: split {split!r} names {pattern}, and no such file exists")
        for m in matches:
            rel = m.relative_to(folder).as_posix()
            try:
                yield split, rel, resolve_inside(m, root, rel)
            except OutsideDataset as exc:
                raise HubError(str(exc)) from None


__all__ = [
    "COLUMNS",
    "LAYOUT",
    "LAYOUT_VERSION",
    "READ_REQUIREMENTS",
    "REQUIRED_COLUMNS",
    "SPLITS",
    "Column",
    "HubError",
    "HubExport",
    "build_dataset_dict",
    "card_metadata",
    "dataset_card",
    "features",
    "hub_row",
    "read_spade_layout",
    "schema_table",
    "write_hub_folder",
]
