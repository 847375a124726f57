"""A pool reads only itself: links and paths that lead out of the dataset's folder are
refused on every path, while a real Hugging Face cache (every snapshot file a link into
the cache repository's ``blobs/``) imports in each layout, from its folder and offline
through ``hf:OWNER/NAME``.

The "secret" each attack tries to import is a valid environment row (or file) outside the
dataset: if it were read, it would be stored, so a store holding it is the failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..cli_support import open_store, spade
from .pools import (
    COMMIT,
    GOOD,
    PATHS,
    claim,
    hf_cache,
    import_json,
    write_export,
    write_jsonl,
    write_manifest,
    write_parquet,
)

SECRET_CODE = GOOD.replace("class GuessNumberEnv", "class SecretEnv")


def secret_files(tmp_path: Path) -> Path:
    """Outside any dataset: a JSONL, a Parquet file, a .py, a metadata file, a card."""
    out = tmp_path / "elsewhere"
    write_jsonl(out / "secret.jsonl", [{"code": SECRET_CODE, "name": "secret", "domain": "games"}])
    write_parquet(out / "secret.parquet", [{"code": SECRET_CODE, "name": "secret", "domain": "games"}])
    (out / "secret.py").write_text(SECRET_CODE)
    (out / "secret.json").write_text(json.dumps({"name": "stolen", "domain": "games", "description": "private"}))
    return out


def assert_secret_not_stored() -> None:
    with open_store() as store:
        for meta in store.find(limit=100):
            assert meta.class_name != "SecretEnv" and meta.name not in ("secret", "stolen"), meta
            assert "private" not in meta.description


def good_row(name: str = "guess") -> dict:
    return {"code": GOOD, "name": name, "domain": "games"}


# --- a folder (spade import DIR) and single files ---------------------------------------------


@pytest.mark.parametrize("link", ["secret.jsonl", "secret.parquet", "secret.py"])
def test_a_file_of_a_folder_that_links_out_is_a_failed_item(link: str, tmp_path: Path, spade_home: Path) -> None:
    out = secret_files(tmp_path)
    pool = tmp_path / "pool"
    write_jsonl(pool / "a_good.jsonl", [good_row()])
    (pool / f"b_{link}").symlink_to(out / link)
    code, report = import_json(str(pool))
    assert code == 1
    by_origin = {r["origin"]: r for r in report}
    assert by_origin["a_good.jsonl:1"]["outcome"] == "imported"
    bad = by_origin[f"b_{link}"]
    assert bad["outcome"] == "failed" and "outside the dataset folder" in bad["reason"], bad
    assert_secret_not_stored()


def test_a_sidecar_that_links_out_is_not_read(tmp_path: Path, spade_home: Path) -> None:
    out = secret_files(tmp_path)
    pool = tmp_path / "pool"
    pool.mkdir()
    (pool / "env.py").write_text(GOOD)
    (pool / "env.json").symlink_to(out / "secret.json")
    code, report = import_json(str(pool), "--domain", "games")
    assert code == 1 and report[0]["outcome"] == "failed"
    assert "metadata file env.json is a link to" in report[0]["reason"]
    assert_secret_not_stored()


def test_a_folder_linked_inside_the_pool_is_not_followed(tmp_path: Path, spade_home: Path) -> None:
    out = secret_files(tmp_path)
    pool = tmp_path / "pool"
    write_jsonl(pool / "good.jsonl", [good_row()])
    (pool / "more").symlink_to(out, target_is_directory=True)
    (tmp_path / "table").mkdir()
    write_jsonl(tmp_path / "table" / "data" / "train.jsonl", [good_row()])
    (tmp_path / "table" / "data" / "more").symlink_to(out, target_is_directory=True)
    assert import_json(str(pool))[0] == 0
    assert import_json("hf:./table")[0] == 0
    assert_secret_not_stored()


def test_a_single_file_that_links_out_is_refused_as_a_whole(tmp_path: Path, spade_home: Path) -> None:
    out = secret_files(tmp_path)
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "pool.jsonl").symlink_to(out / "secret.jsonl")
    run = spade("import", str(tmp_path / "shared" / "pool.jsonl"))
    assert run.exit_code == 2 and "outside the dataset folder" in run.stderr, run.output
    assert "Traceback" not in run.output
    assert_secret_not_stored()


# --- hf: layouts ------------------------------------------------------------------------------


def test_a_table_file_of_a_dataset_that_links_out_is_a_failed_item(tmp_path: Path, spade_home: Path) -> None:
    out = secret_files(tmp_path)
    write_jsonl(tmp_path / "table" / "data" / "a.jsonl", [good_row()])
    (tmp_path / "table" / "data" / "b.parquet").symlink_to(out / "secret.parquet")
    (tmp_path / "table" / "data" / "c.json").symlink_to(out / "secret.json")
    code, report = import_json("hf:./table")
    assert code == 1
    assert report[0]["outcome"] == "imported"
    assert [(r["origin"], r["outcome"]) for r in report[1:]] == [("data/b.parquet", "failed"), ("data/c.json", "failed")]
    assert all("outside the dataset folder" in r["reason"] for r in report[1:])
    assert_secret_not_stored()


@pytest.mark.parametrize(
    "entry, reason",
    [
        ({"path_in_dataset": "../elsewhere/secret.py"}, "climbs out with '..'"),
        ({"path_in_dataset": "games/../../elsewhere/secret.py"}, "climbs out with '..'"),
        ({"path_in_dataset": "/etc/hostname"}, "is absolute"),
        ({"path": "games/gen_0000/inside_link.py"}, "outside the dataset folder"),
        ({"filename": "inside_link.py"}, "outside the dataset folder"),
        ({"source_run": "../../elsewhere", "filename": "secret.py"}, "not in the dataset"),
        ({"generation": "../../elsewhere", "filename": "secret.py"}, "not in the dataset"),
        ({"filename": "../elsewhere/secret.py"}, "must be a bare name"),
        ({"path_in_dataset": "games/\x00.py"}, "NUL byte"),
        ({"path_in_dataset": "x" * 5000}, "no such file"),
        ({"path_in_dataset": 7, "filename": ["secret.py"]}, "names no file"),
    ],
)
def test_a_manifest_entry_that_points_out_is_a_failed_entry(entry: dict, reason: str, tmp_path: Path, spade_home: Path) -> None:
    secret_files(tmp_path)
    run = write_manifest(tmp_path / "run", [good_row()])
    (run / "games" / "gen_0000" / "inside_link.py").symlink_to(tmp_path / "elsewhere" / "secret.py")
    (run / "environments").mkdir()  # so that environments/../../elsewhere leads somewhere
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["games"].append(entry)
    (run / "manifest.json").write_text(json.dumps(manifest))
    code, report = import_json("hf:./run")
    assert code == 1
    assert report[0]["outcome"] == "imported"
    assert report[1]["outcome"] == "failed" and reason in report[1]["reason"], report[1]
    assert_secret_not_stored()


@pytest.mark.parametrize("pattern", ["../elsewhere/*.parquet", "data/../../elsewhere/secret.parquet", "/tmp/*.parquet"])
def test_an_export_card_naming_files_outside_is_refused(pattern: str, tmp_path: Path, spade_home: Path) -> None:
    secret_files(tmp_path)
    folder = write_export(tmp_path / "export", [claim("export-doc", GOOD, "guess")])
    card = folder / "README.md"
    card.write_text(card.read_text().replace("path: data/train-00000-of-00001.parquet", f"path: {pattern}"))
    run = spade("import", "hf:./export")
    assert run.exit_code == 2, run.output
    assert "Traceback" not in run.output and "must be a path inside the dataset" in " ".join(run.stderr.split())
    with open_store() as store:
        assert store.count() == 0


def test_an_export_whose_data_file_or_card_links_out_is_refused(tmp_path: Path, spade_home: Path) -> None:
    secret_files(tmp_path)
    other = write_export(tmp_path / "other", [claim("export-doc", SECRET_CODE, "secret")])
    folder = write_export(tmp_path / "export", [claim("export-doc", GOOD, "guess")])
    data = folder / "data" / "train-00000-of-00001.parquet"
    data.unlink()
    data.symlink_to(other / "data" / "train-00000-of-00001.parquet")
    run = spade("import", "hf:./export")
    assert run.exit_code == 2 and "outside the dataset folder" in " ".join(run.stderr.split()), run.output
    (folder / "README.md").unlink()
    (folder / "README.md").symlink_to(other / "README.md")
    run = spade("import", "hf:./export")
    assert run.exit_code == 2 and "outside the dataset folder" in " ".join(run.stderr.split()), run.output
    assert_secret_not_stored()


# --- a real Hugging Face cache ------------------------------------------------------------------


@pytest.mark.parametrize("path", ["hf-cache-manifest", "hf-cache-table", "hf-cache-export"])
def test_every_layout_imports_from_a_real_hf_cache_snapshot(path: str, tmp_path: Path, spade_home: Path) -> None:
    (source,) = PATHS[path](tmp_path, [good_row(), {**good_row("twin"), "code": GOOD.replace("high=64", "high=32")}])
    snapshot = Path(source.removeprefix("hf:"))
    assert all(p.is_symlink() for p in snapshot.rglob("*") if not p.is_dir()), "a real cache: links into blobs/"
    code, report = import_json(source, "--trust")
    assert code == 0, report
    assert [r["outcome"] for r in report] == ["imported", "imported"]
    assert not any(r["origin"].startswith(("blobs", "/")) for r in report), "origins name the snapshot's paths"


def test_a_cache_link_into_another_repository_is_refused(tmp_path: Path, spade_home: Path) -> None:
    cache = tmp_path / "hf-cache"
    other = hf_cache(cache, "someone/private", write_manifest(tmp_path / "private", [{"code": SECRET_CODE}]))
    snap = hf_cache(cache, "spade-rl/pool", write_manifest(tmp_path / "plain", [good_row()]))
    (snap / "games" / "gen_0000" / "stolen.py").symlink_to(os.path.relpath(other / "games" / "gen_0000" / "game_00000.py", snap / "games" / "gen_0000"))
    manifest = json.loads((snap / "manifest.json").read_text())
    manifest["games"].append({"path_in_dataset": "games/gen_0000/stolen.py"})
    (snap / "manifest.json").unlink()
    (snap / "manifest.json").write_text(json.dumps(manifest))
    code, report = import_json(f"hf:{snap}")
    assert code == 1 and [r["outcome"] for r in report] == ["imported", "failed"]
    assert "outside the dataset folder" in report[1]["reason"] and "datasets--spade-rl--pool" in report[1]["reason"]
    assert_secret_not_stored()


def test_a_hub_reference_imports_a_cached_manifest_layout_offline(tmp_path: Path, spade_home: Path) -> None:
    """``hf:OWNER/NAME`` through huggingface_hub's own cache lookup (HF_HUB_OFFLINE=1), in a
    process of its own as the CLI runs: the snapshot's files are all links into blobs/."""
    cache = tmp_path / "hf-cache"
    hf_cache(cache, "spade-rl/games-run", write_manifest(tmp_path / "run", [claim("flat", GOOD, "guess")]))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache)}
    spade_bin = str(Path(sys.executable).with_name("spade"))
    for ref in ("hf:spade-rl/games-run", f"hf:spade-rl/games-run@{COMMIT}"):
        run = subprocess.run([spade_bin, "import", ref, "--json"], capture_output=True, text=True, env=env, timeout=120)
        assert run.returncode == 0, run.stderr
        (row,) = json.loads(run.stdout)
        assert row["outcome"] in ("imported", "unchanged") and row["origin"] == "games/gen_0000/game_00000.py"
    with open_store() as store:
        assert store.count() == 1 and store.admitted_ids() == [], "the cached dataset's 'admitted' is its word only"


def test_a_link_to_a_cache_snapshot_imports_like_the_snapshot(tmp_path: Path, spade_home: Path) -> None:
    """``hf:./my-pool`` where my-pool links to a cached snapshot: the cache repository is
    found from the real path, so the snapshot's links into blobs/ are inside."""
    snap = hf_cache(tmp_path / "hf-cache", "spade-rl/pool", write_manifest(tmp_path / "plain", [good_row()]))
    (tmp_path / "my-pool").symlink_to(snap, target_is_directory=True)
    code, report = import_json("hf:./my-pool")
    assert code == 0 and [r["outcome"] for r in report] == ["imported"], report
