"""Sharing environments as Hugging Face datasets: ``spade export --to-hub`` and ``spade import hf:``.

A reference ``hf:REPO[@REVISION]`` names a Hub dataset (``owner/name``), fetched with
``huggingface_hub.snapshot_download`` (so ``HF_HUB_OFFLINE=1`` reads the local cache),
or a local folder (``hf:./folder``: a reference starting with ``.``, ``/`` or ``~``, or
``file:``). What a folder holds is read as the export layout (:mod:`spade_core.app.hub_layout`)
or as one of the published pools' layouts (:mod:`spade_core.app.published_pools`).
An export goes to a local folder, or to a temporary one that :func:`upload_folder`
uploads in one call: the only step that needs the network.

The export layout's names are re-exported here, so this module is the public surface.
"""

from __future__ import annotations

import re
import tempfile
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..metadata import EnvMetadata
from .hub_layout import (
    COLUMNS,
    INSTALL_HINT,
    LAYOUT,
    LAYOUT_VERSION,
    Column,
    HubError,
    HubExport,
    build_dataset_dict,
    card_metadata,
    dataset_card,
    features,
    hub_row,
    read_spade_layout,
    schema_table,
    write_hub_folder,
)
from .import_rows import UNTRUSTED_STATUS_NOTE
from .import_sources import RawItem
from .published_pools import read_published

#: What the Hub accepts as a repository id: ``name`` or ``owner/name``.
REPO_ID_RE = re.compile(r"^(?:[A-Za-z0-9][\w.-]{0,95}/)?[A-Za-z0-9][\w.-]{0,95}$")


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


# --- uploading ----------------------------------------------------------------------


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


def read_hub_items(ref: HubRef, *, keep_status: bool | None = None) -> list[RawItem]:
    """Every environment of ``ref`` as import items, in a stable order.

    The layout is recognised by the folder: a card whose ``spade.layout`` is
    ``spade-envs`` (an export), else the published SPADE pools' layouts
    (:func:`spade_core.app.published_pools.read_published`). Problems with the dataset as a
    whole raise :class:`HubError` (or :class:`~spade_core.app.dataset_files.ImportSourceError`)
    before anything is imported; a bad row is an item with its own outcome. Files are read
    only inside the dataset's folder, or inside its cache repository's folder for a
    Hugging Face cache snapshot (:mod:`spade_core.app.dataset_files`).

    The items carry the statuses the dataset records. A dataset is someone else's word:
    :func:`~spade_core.app.import_rows.prepare` reads a recorded ``admitted`` as a ``candidate``
    unless ``ImportOptions(trust=True)`` (``spade import --trust``), as for every import
    path. ``keep_status`` is accepted for compatibility and no longer does anything.
    """
    if keep_status is not None:
        warnings.warn(
            "read_hub_items(keep_status=...) does nothing: whether a dataset's statuses are kept is "
            "ImportOptions(trust=...) of the import",
            DeprecationWarning,
            stacklevel=2,
        )
    folder = snapshot(ref)
    meta = card_metadata(folder)
    if meta is not None and isinstance(meta.get("spade"), dict):
        layout = meta["spade"].get("layout")
        if layout != LAYOUT:
            raise HubError(f"{folder / 'README.md'}: unknown spade.layout {layout!r} (this SPADE reads {LAYOUT!r})")
        return read_spade_layout(folder, meta)
    return read_published(folder)


__all__ = [
    "COLUMNS",
    "LAYOUT",
    "LAYOUT_VERSION",
    "Column",
    "HubError",
    "HubExport",
    "HubRef",
    "UNTRUSTED_STATUS_NOTE",
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
