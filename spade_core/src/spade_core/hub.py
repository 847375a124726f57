"""Sharing environments as Hugging Face datasets: ``spade export --to-hub`` and ``spade import hf:``.

The export layout (``spade-envs``, version :data:`LAYOUT_VERSION`) is a dataset repository:

* ``data/<split>-00000-of-00001.parquet``: one row per environment, the columns of
  :data:`COLUMNS` (written by ``datasets``); split ``train`` holds the store's
  environments, split ``seeds`` (only with ``include_seeds``) the installed plugins' seeds;
* ``README.md``: the dataset card. Its YAML front matter declares the splits'
  ``data_files`` and features (what the Hub's viewer and ``datasets.load_dataset`` read)
  and a ``spade`` block naming the layout and its version; its text states the schema.

The ``metadata`` column holds the full :class:`~spade_core.metadata.EnvMetadata`
document as JSON and is what import reads, so export -> import reproduces names,
versions, status, lineage, validation, stats and hints; the other columns repeat parts
of it flat for the viewer and for filtering with ``datasets``.

A reference ``hf:REPO[@REVISION]`` names a Hub dataset (``owner/name``), fetched with
``huggingface_hub.snapshot_download`` (so ``HF_HUB_OFFLINE=1`` reads the local cache),
or a local folder in one of the layouts :mod:`spade_core.published_pools` also reads
(``hf:./folder``; a reference starting with ``.``, ``/`` or ``~``, or ``file:``).
Upload is one call (:func:`upload_folder`) on the folder :func:`write_hub_folder` wrote.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ._version import __version__
from .errors import SpadeError
from .importer import RawItem
from .metadata import EnvMetadata
from .names import SCHEMA_VERSION
from .published_pools import read_published

LAYOUT = "spade-envs"
LAYOUT_VERSION = 1
#: Splits of an export, in order: store environments, then seeds (on request).
SPLITS = ("train", "seeds")
INSTALL_HINT = "pip install 'spade-core[hub]'"
#: What the Hub accepts as a repository id: ``name`` or ``owner/name``.
REPO_ID_RE = re.compile(r"^(?:[A-Za-z0-9][\w.-]{0,95}/)?[A-Za-z0-9][\w.-]{0,95}$")


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


# --- references ----------------------------------------------------------------------


@dataclass(frozen=True)
class HubRef:
    """Where ``hf:...`` points: a Hub ``repo_id`` (with an optional ``revision``) or a local ``path``."""

    text: str
    repo_id: str | None = None
    path: Path | None = None
    revision: str | None = None


def is_hub_ref(text: str) -> bool:
    return text.startswith("hf:")


def _is_local(text: str) -> bool:
    return text.startswith(("file:", ".", "/", "~"))


def parse_hub_ref(text: str) -> HubRef:
    """``hf:owner/name[@revision]`` or ``hf:./folder`` (see the module docstring)."""
    if not is_hub_ref(text):
        raise HubError(f"{text!r} is not a Hub reference (write hf:owner/name[@revision] or hf:./folder)")
    body = text[len("hf:") :].strip()
    if not body:
        raise HubError("hf: needs a dataset: hf:owner/name[@revision] or hf:./folder")
    if _is_local(body):
        return HubRef(text, path=Path(body.removeprefix("file:")).expanduser())
    repo_id, sep, revision = body.partition("@")
    if sep and not revision.strip():
        raise HubError(f"{text}: empty revision after '@' (write @main, a tag or a commit hash)")
    if revision and (revision != revision.strip() or any(c.isspace() for c in revision)):
        raise HubError(f"{text}: a revision has no spaces")
    if not REPO_ID_RE.match(repo_id) or ".." in repo_id or repo_id.endswith((".git", ".")):
        raise HubError(
            f"{text}: {repo_id!r} is not a Hugging Face repository id (owner/name: letters, digits, '-', '_', '.'); "
            "a local folder is written hf:./folder"
        )
    return HubRef(text, repo_id=repo_id, revision=revision or None)


def export_target(text: str) -> HubRef:
    """What ``--to-hub`` names: a repository id to upload to, or a local folder to write."""
    body = text.removeprefix("hf:")
    if _is_local(body):
        return HubRef(text, path=Path(body.removeprefix("file:")).expanduser())
    if "@" in body:
        raise HubError(f"--to-hub {text}: an export goes to a repository's main branch; drop '@...'")
    return parse_hub_ref("hf:" + body)


# --- rows and the dataset ------------------------------------------------------------


def hub_row(source: str, meta: EnvMetadata) -> dict[str, Any]:
    """One environment as a row of :data:`COLUMNS`."""
    latest = meta.latest_stats
    report = meta.validation
    return {
        "id": meta.id,
        "name": meta.name,
        "version": meta.version,
        "domain": meta.domain,
        "skill": meta.skill,
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


# --- writing and uploading -----------------------------------------------------------


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


def upload_folder(folder: Path, repo_id: str, *, private: bool = False, message: str | None = None) -> str:
    """Upload an exported folder as the dataset ``repo_id`` (created when missing);
    returns the commit URL. The only step of an export that needs the network."""
    try:
        from huggingface_hub import HfApi
        from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled
    except ImportError:
        raise HubError(f"uploading needs huggingface_hub ({INSTALL_HINT})") from None
    api = HfApi()
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        info = api.upload_folder(
            repo_id=repo_id,
            repo_type="dataset",
            folder_path=str(folder),
            commit_message=message or "spade export",
            delete_patterns=["data/*"],  # shards of an earlier export this one replaces
        )
    except OfflineModeIsEnabled:
        raise HubError(f"cannot upload to {repo_id}: HF_HUB_OFFLINE is set (write a folder with --to-hub ./DIR)") from None
    except HfHubHTTPError as exc:
        raise HubError(f"upload to {repo_id} failed: {exc}") from None
    except OSError as exc:  # connection refused, DNS, ...
        raise HubError(f"upload to {repo_id} failed: the Hub cannot be reached ({exc})") from None
    return str(getattr(info, "commit_url", info))


def export_to_hub(
    envs: Iterable[tuple[str, EnvMetadata]],
    target: HubRef,
    *,
    seeds: Iterable[tuple[str, EnvMetadata]] | None = None,
    overwrite: bool = False,
    private: bool = False,
    message: str | None = None,
) -> HubExport:
    """Write ``target.path``, or write a temporary folder and upload it to ``target.repo_id``."""
    if target.path is not None:
        return write_hub_folder(envs, target.path, seeds=seeds, overwrite=overwrite)
    assert target.repo_id is not None
    with tempfile.TemporaryDirectory(prefix="spade-hub-") as tmp:
        written = write_hub_folder(envs, Path(tmp) / "export", seeds=seeds, pretty_name=target.repo_id)
        url = upload_folder(written.folder, target.repo_id, private=private, message=message)
    return HubExport(Path(target.repo_id), written.counts, url)


# --- reading -------------------------------------------------------------------------


def snapshot(ref: HubRef) -> Path:
    """The local folder holding ``ref``: the folder itself, or the Hub dataset's snapshot
    (``huggingface_hub.snapshot_download``: downloads, or reads the cache when offline)."""
    if ref.path is not None:
        if not ref.path.exists():
            raise HubError(f"{ref.text}: no such folder {ref.path}")
        if not ref.path.is_dir():
            raise HubError(f"{ref.text}: {ref.path} is not a folder (import a file without hf:)")
        return ref.path
    assert ref.repo_id is not None
    try:
        from huggingface_hub import constants, snapshot_download
        from huggingface_hub.errors import (
            HfHubHTTPError,
            LocalEntryNotFoundError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )
    except ImportError:
        raise HubError(f"{ref.text}: reading from the Hub needs huggingface_hub ({INSTALL_HINT})") from None
    revision = ref.revision or "main"
    try:
        return Path(snapshot_download(ref.repo_id, repo_type="dataset", revision=ref.revision))
    except RevisionNotFoundError:
        raise HubError(f"{ref.text}: the dataset {ref.repo_id} has no revision {revision!r}") from None
    except RepositoryNotFoundError:
        raise HubError(
            f"{ref.text}: no dataset {ref.repo_id} on the Hub (or it is private or gated: log in with `hf auth login`)"
        ) from None
    except LocalEntryNotFoundError:
        raise HubError(_not_cached(ref, revision, Path(constants.HF_HUB_CACHE), constants.HF_HUB_OFFLINE)) from None
    except HfHubHTTPError as exc:
        raise HubError(f"{ref.text}: download failed: {exc}") from None


def _not_cached(ref: HubRef, revision: str, cache: Path, offline: bool) -> str:
    why = "HF_HUB_OFFLINE is set" if offline else "the Hub cannot be reached"
    repo_folder = cache / ("datasets--" + str(ref.repo_id).replace("/", "--"))
    refs = sorted(p.name for p in (repo_folder / "refs").glob("*")) if (repo_folder / "refs").is_dir() else []
    if refs or (repo_folder / "snapshots").is_dir():
        cached = ", ".join(refs) or "commit hashes only"
        return (
            f"{ref.text}: revision {revision!r} of {ref.repo_id} is not in the local cache {cache} "
            f"({why}; cached revisions: {cached})"
        )
    return (
        f"{ref.text}: {ref.repo_id} is not in the local cache {cache} and {why}; download it once online, "
        "or import a local copy with hf:./folder"
    )


def card_metadata(folder: Path) -> dict[str, Any] | None:
    """The YAML front matter of ``folder/README.md`` (``None`` without a card)."""
    readme = folder / "README.md"
    if not readme.is_file():
        return None
    from huggingface_hub import DatasetCard

    try:
        card = DatasetCard.load(readme)
    except Exception as exc:  # the library raises ValueError / yaml errors for a malformed header
        raise HubError(f"{readme}: the dataset card's YAML header cannot be read: {exc}") from None
    return card.data.to_dict()


def read_spade_layout(folder: Path, meta: dict[str, Any]) -> list[RawItem]:
    """Every row of an export (:data:`COLUMNS`), checked as a whole first: a layout
    newer than this version, a missing data file, an unreadable Parquet file or a missing
    column raises :class:`HubError` before any row is returned."""
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
    import pyarrow.parquet as pq

    items: list[RawItem] = []
    for split, path in files:
        rel = path.relative_to(folder).as_posix()
        try:
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several types for a damaged file
            raise HubError(f"{rel}: not a readable Parquet file: {exc}") from None
        missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
        if missing:
            raise HubError(
                f"{rel}: missing column {', '.join(map(repr, missing))} (layout {LAYOUT} v{version} needs "
                f"{', '.join(REQUIRED_COLUMNS)}; the file has {', '.join(table.column_names) or 'none'})"
            )
        for i, row in enumerate(table.select(list(REQUIRED_COLUMNS)).to_pylist()):
            items.append(RawItem(f"{split}#{i}", row))
    return items


def _split_files(folder: Path, meta: dict[str, Any]) -> Iterator[tuple[str, Path]]:
    configs = meta.get("configs") or []
    default = next((c for c in configs if isinstance(c, dict) and c.get("config_name") == "default"), None)
    if default is None:
        raise HubError(f"{folder / 'README.md'}: the card declares no 'default' config with data_files")
    entries = default.get("data_files") or []
    if not isinstance(entries, list) or not entries:
        raise HubError(f"{folder / 'README.md'}: the 'default' config lists no data_files")
    for entry in entries:
        split, pattern = (entry.get("split"), entry.get("path")) if isinstance(entry, dict) else (None, None)
        if not isinstance(split, str) or not isinstance(pattern, str):
            raise HubError(f"{folder / 'README.md'}: a data_files entry needs 'split' and 'path', got {entry!r}")
        matches = sorted(folder.glob(pattern))
        if not matches:
            raise HubError(f"{folder}: split {split!r} names {pattern}, and no such file exists")
        for m in matches:
            yield split, m


def read_hub_items(ref: HubRef, *, keep_status: bool = False) -> list[RawItem]:
    """Every environment of ``ref`` as import items, in a stable order.

    The layout is recognised by the folder: a card whose ``spade.layout`` is
    ``spade-envs`` (an export), else the published SPADE pools' layouts
    (:func:`spade_core.published_pools.read_published`). Problems with the dataset as a
    whole raise :class:`HubError` (or :class:`~spade_core.importer.ImportSourceError`)
    before anything is imported; a bad row is an item with its own outcome.

    A dataset is someone else's word: a row it records as ``admitted`` is read as a
    ``candidate`` (with a note) unless ``keep_status`` (``spade import --trust``); the
    import's ``--status admitted`` then decides admission through validation.
    """
    folder = snapshot(ref)
    meta = card_metadata(folder)
    if meta is not None and isinstance(meta.get("spade"), dict):
        layout = meta["spade"].get("layout")
        if layout != LAYOUT:
            raise HubError(f"{folder / 'README.md'}: unknown spade.layout {layout!r} (this SPADE reads {LAYOUT!r})")
        items = read_spade_layout(folder, meta)
    else:
        items = read_published(folder)
    return items if keep_status else [_as_candidate(i) for i in items]


UNTRUSTED_STATUS_NOTE = (
    "recorded as admitted in the dataset, read as a candidate (--status admitted validates it; "
    "--trust keeps the dataset's status)"
)


def _as_candidate(item: RawItem) -> RawItem:
    if item.error is not None:
        return item
    row = dict(item.row)
    changed = False
    doc = row.get("metadata")
    if isinstance(doc, str):
        try:
            parsed = json.loads(doc)
        except json.JSONDecodeError:
            parsed = None  # prepare() reports the bad JSON
        if isinstance(parsed, dict) and parsed.get("status") == "admitted":
            row["metadata"] = json.dumps({**parsed, "status": "candidate"}, ensure_ascii=False)
            changed = True
    elif isinstance(doc, dict) and doc.get("status") == "admitted":
        row["metadata"] = {**doc, "status": "candidate"}
        changed = True
    if row.get("status") == "admitted":
        row["status"] = "candidate"
        changed = True
    if not changed:
        return item
    return RawItem(item.origin, row, from_file=item.from_file, infer_domain=item.infer_domain,
                   notes=(*item.notes, UNTRUSTED_STATUS_NOTE))


__all__ = [
    "COLUMNS",
    "LAYOUT",
    "LAYOUT_VERSION",
    "Column",
    "HubError",
    "HubExport",
    "HubRef",
    "build_dataset_dict",
    "dataset_card",
    "export_target",
    "export_to_hub",
    "features",
    "hub_row",
    "is_hub_ref",
    "parse_hub_ref",
    "read_hub_items",
    "schema_table",
    "snapshot",
    "upload_folder",
    "write_hub_folder",
]
