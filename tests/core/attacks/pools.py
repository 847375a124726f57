"""Hostile pools as data: every path ``spade import`` reads, built from the same rows.

A *row* is a plain dict (``code`` plus whatever else the attack puts in it); a *path*
(:data:`PATHS`) lays rows out as one of the inputs import accepts and returns the
sources to pass to ``spade import``: a JSONL file, a Parquet file, ``.py`` files with
sidecar metadata, a folder mixing them, and the ``hf:`` layouts (a published table, a
manifest with ``.py`` files, a SPADE export, and each of those inside a real Hugging Face
cache, whose snapshot files are links into ``blobs/``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from spade_core.app.hub import write_hub_folder
from spade_core.metadata import EnvMetadata, EnvStatus, ValidationReport, code_hash

from ..cli_support import spade
from ..conftest import REFERENCE_ENVS

GOOD = (REFERENCE_ENVS / "guess_number.py").read_text()
#: A reference-style game whose step crashes on any action that is not a boxed number:
#: the validation pipeline rejects it (stage ``contract``).
CRASHY = '''
import re


class CrashyGuessEnv:
    """Guess 1-9 with \\\\boxed{N}."""

    def reset(self, seed=None):
        self.secret = (seed or 0) % 9 + 1
        return "Guess 1-9 with \\\\boxed{N}.", {}

    def step(self, action):
        n = int(re.findall(r"\\\\boxed\\{(.*?)\\}", action)[-1])
        return "ok", float(n == self.secret), n == self.secret, False, {}

    def solution(self):
        return ["\\\\boxed{%d}" % self.secret]
'''
COMMIT = "89abcdef0123456789abcdef0123456789abcdef"


def import_json(*args: str) -> tuple[int, list[dict]]:
    run = spade("import", *args, "--json")
    assert "Traceback" not in run.output, run.output
    assert run.stdout.strip(), run.output
    return run.exit_code, json.loads(run.stdout)


def import_all(sources: list[str], *flags: str) -> tuple[int, list[dict]]:
    """``spade import SOURCE FLAGS --json`` for each source: the worst exit code, all rows."""
    worst, rows = 0, []
    for source in sources:
        code, report = import_json(source, *flags)
        worst, rows = max(worst, code), rows + report
    return worst, rows


# --- how a row claims to be admitted --------------------------------------------------


def exported_doc(code: str, name: str, **extra: Any) -> dict[str, Any]:
    """A complete EnvMetadata document (what ``spade export`` writes) that claims admission
    and a passed validation it never had."""
    fields: dict[str, Any] = {
        "status": EnvStatus.admitted, "validation": ValidationReport(passed=True, feasibility_proven=True), **extra,
    }
    meta = EnvMetadata(name=name, domain="games", skill="general", code_hash=code_hash(code), **fields)
    return json.loads(meta.model_dump_json())


def claim(encoding: str, code: str, name: str) -> dict[str, Any]:
    """A row whose data says ``admitted`` in one of the ways import understands."""
    flat = {"name": name, "domain": "games", "status": "admitted"}
    if encoding == "flat":
        return {"code": code, **flat}
    if encoding == "metadata-object":
        return {"code": code, "metadata": flat}
    if encoding == "metadata-json":
        return {"code": code, "metadata": json.dumps(flat)}
    if encoding == "export-doc":
        return {"code": code, "metadata": json.dumps(exported_doc(code, name))}
    raise ValueError(encoding)


ENCODINGS = ("flat", "metadata-object", "metadata-json", "export-doc")


# --- laying rows out ------------------------------------------------------------------


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def write_parquet(path: Path, rows: list[dict]) -> Path:
    """The rows as a Parquet table: every key any row has is a column (null elsewhere)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = list(dict.fromkeys(k for r in rows for k in r))
    pq.write_table(pa.table({k: pa.array([r.get(k) for r in rows]) for k in keys}), path)
    return path


def write_py(folder: Path, stem: str, row: dict) -> Path:
    """``stem.py`` with the row's code and, when the row says more, ``stem.json`` beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stem}.py").write_text(row["code"])
    meta = {k: v for k, v in row.items() if k != "code"}
    if isinstance(meta.get("metadata"), str):
        try:
            meta["metadata"] = json.loads(meta["metadata"])
        except (ValueError, RecursionError):
            pass  # a hostile string stays a string
    if "metadata" in meta and isinstance(meta["metadata"], dict) and "schema_version" in meta["metadata"]:
        meta = meta["metadata"]  # a full document flattened into the sidecar, as `export --format dir` writes
    if meta:
        (folder / f"{stem}.json").write_text(json.dumps(meta))
    return folder / f"{stem}.py"


def write_manifest(folder: Path, rows: list[dict]) -> Path:
    """The training runs' layout: ``manifest.json`` entries naming ``games/gen_0000/*.py``."""
    entries = []
    for i, row in enumerate(rows):
        rel = f"games/gen_0000/game_{i:05d}.py"
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(row["code"])
        entries.append({"generation": "gen_0000", "path_in_dataset": rel, **{k: v for k, v in row.items() if k != "code"}})
    (folder / "manifest.json").write_text(json.dumps({"summary": {}, "games": entries}))
    return folder


def write_export(folder: Path, rows: list[dict]) -> Path:
    """A SPADE export (``spade-envs`` layout) whose metadata documents say what the rows say."""
    envs = []
    for i, row in enumerate(rows):
        doc = row.get("metadata")
        doc = json.loads(doc) if isinstance(doc, str) else doc
        if not (isinstance(doc, dict) and "schema_version" in doc):
            doc = exported_doc(row["code"], f"env{i}")
        envs.append((row["code"], EnvMetadata.model_validate(doc)))
    write_hub_folder(envs, folder)
    return folder


def hf_cache(cache: Path, repo_id: str, folder: Path, *, keep: bool = False) -> Path:
    """``folder`` laid out as huggingface_hub caches a dataset: every file a blob under
    ``blobs/<sha256>``, linked from ``snapshots/<commit>/<path>`` by a relative link, and
    ``refs/main`` naming the commit. Returns the snapshot folder."""
    repo = cache / ("datasets--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(COMMIT)
    (repo / "blobs").mkdir(exist_ok=True)
    snap = repo / "snapshots" / COMMIT
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        link = snap / path.relative_to(folder)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    if not keep:
        shutil.rmtree(folder)
    return snap


#: A path: (tmp folder, rows) -> the sources to import.
Layout = Callable[[Path, list[dict]], list[str]]


def _py_files(tmp: Path, rows: list[dict]) -> list[str]:
    return [str(write_py(tmp / "envs", f"env{i}", row)) for i, row in enumerate(rows)]


def _folder(tmp: Path, rows: list[dict]) -> list[str]:
    """A folder mixing the three file kinds: ``.py`` + sidecar, JSONL and Parquet."""
    folder = tmp / "pool"
    for i, row in enumerate(rows):
        kind = i % 3
        if kind == 0:
            write_py(folder, f"a{i}", row)
        elif kind == 1:
            write_jsonl(folder / f"b{i}.jsonl", [row])
        else:
            write_parquet(folder / f"c{i}.parquet", [row])
    return [str(folder)]


def _hf_table(suffix: str) -> Layout:
    def build(tmp: Path, rows: list[dict]) -> list[str]:
        data = tmp / "table" / "data" / f"train{suffix}"
        if suffix == ".parquet":
            write_parquet(data, rows)
        elif suffix == ".json":
            data.parent.mkdir(parents=True)
            data.write_text(json.dumps(rows))
        else:
            write_jsonl(data, rows)
        return ["hf:" + str(tmp / "table")]

    return build


def _cached(layout: Callable[[Path, list[dict]], Path]) -> Layout:
    def build(tmp: Path, rows: list[dict]) -> list[str]:
        folder = layout(tmp / "plain", rows)
        return ["hf:" + str(hf_cache(tmp / "hf-cache", "spade-rl/pool", folder))]

    return build


PATHS: dict[str, Layout] = {
    "jsonl": lambda tmp, rows: [str(write_jsonl(tmp / "pool.jsonl", rows))],
    "parquet": lambda tmp, rows: [str(write_parquet(tmp / "pool.parquet", rows))],
    "py+sidecar": _py_files,
    "folder": _folder,
    "hf-table-jsonl": _hf_table(".jsonl"),
    "hf-table-json": _hf_table(".json"),
    "hf-table-parquet": _hf_table(".parquet"),
    "hf-manifest": lambda tmp, rows: ["hf:" + str(write_manifest(tmp / "run", rows))],
    "hf-export": lambda tmp, rows: ["hf:" + str(write_export(tmp / "export", rows))],
    "hf-cache-manifest": _cached(write_manifest),
    "hf-cache-table": _cached(lambda folder, rows: write_jsonl(folder / "data" / "train.jsonl", rows).parents[1]),
    "hf-cache-export": _cached(write_export),
}
