"""Hub sharing, offline: ``spade export --to-hub`` writes a dataset folder in the export layout
(``datasets`` parquet + a dataset card), ``spade import hf:`` reads it back into a fresh store,
reads the published SPADE pools' layouts, and reads Hub datasets from the Hugging Face cache
with ``HF_HUB_OFFLINE=1``; whole-dataset problems stop the import before anything is stored."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spade_core.app.hub import (
    COLUMNS,
    LAYOUT_VERSION,
    HubError,
    HubRef,
    export_target,
    parse_hub_ref,
    read_hub_items,
    write_hub_folder,
)
from spade_core.app.importer import ImportOptions, prepare
from spade_core.app.published_pools import normalise_skill
from spade_core.metadata import EnvMetadata, EnvStatus, StatsSnapshot, ValidationReport, code_hash

from .cli_support import open_store, spade
from .conftest import REFERENCE_ENVS
from .strategies import env_metadata

ROOT = Path(__file__).resolve().parents[2]

#: A tool-use environment in the published pools' style: it subclasses ``ToolUseBaseEnv``
#: without importing it (the loader provides the base).
TOOL_ENV = '''import json
import random


class ShelfCountMTEnv(ToolUseBaseEnv):
    def reset(self, seed=None):
        rng = random.Random(seed)
        self._state = {"shelves": {f"S{i}": rng.randint(1, 40) for i in range(1, 5)}}
        self._state["target"] = rng.choice(sorted(self._state["shelves"]))
        self._tools = {
            "count_items": {
                "description": "Items on one shelf.",
                "parameters": {"type": "object", "properties": {"shelf": {"type": "string"}}, "required": ["shelf"]},
            }
        }
        self._expected_answer = str(self._state["shelves"][self._state["target"]] * 2)
        self.turn_count = 0
        return f"Twice the items on {self._state['target']}? Use the tools, then <answer>N</answer>.", {}

    def tool_count_items(self, shelf):
        return str(self._state["shelves"].get(shelf, "no such shelf"))

    def solution(self):
        call = json.dumps({"name": "count_items", "arguments": {"shelf": self._state["target"]}})
        return f"<tool_call>{call}</tool_call>\\n<answer>{self._expected_answer}</answer>"
'''


def import_json(*args: str) -> tuple[int, list[dict]]:
    run = spade("import", *args, "--json")
    assert run.stdout.strip(), run.output
    return run.exit_code, json.loads(run.stdout)


def use_home(path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("SPADE_HOME", str(path))
    return path


def fill_store() -> dict[str, EnvMetadata]:
    """Four reference environments with everything an export must carry: statuses,
    lineage, a hint, statistics and a validation report."""
    assert spade("import", str(REFERENCE_ENVS), "--domain", "games").exit_code == 0
    with open_store() as store:
        hanoi = store.get("TowerOfHanoi-v1")
        child_source = store.get_source("SwapSort-v1")
        store.set_status("GuessNumber-v1", EnvStatus.admitted)
        store.set_hint("GuessNumber-v1", "Halve the interval each turn.")
        store.record_stats("GuessNumber-v1", StatsSnapshot(policy_snapshot="step-8", samples=16, win_rate=0.5, regret=0.1))
        store.set_validation("GuessNumber-v1", ValidationReport(passed=True, feasibility_proven=True))
        child = EnvMetadata(
            name="SwapSortHard", domain="games", skill="planning", parent_ids=[hanoi.id, "SwapSort-v1"],
            tags=["edited"],
        )
        store.add(child_source + "\n# harder\n", child)
        return {m.id: m for m in store.find(limit=100)}


def comparable(meta: EnvMetadata) -> dict:
    return meta.model_dump(mode="json")


# --- references ------------------------------------------------------------------------


def test_references_name_a_hub_dataset_or_a_local_folder() -> None:
    assert parse_hub_ref("hf:spade-rl/SPADE-Environments-ToolUse").repo_id == "spade-rl/SPADE-Environments-ToolUse"
    ref = parse_hub_ref("hf:org/pool@v1.2")
    assert (ref.repo_id, ref.revision, ref.path) == ("org/pool", "v1.2", None)
    assert parse_hub_ref("hf:./exported").path == Path("exported")
    assert parse_hub_ref("hf:file:exported").path == Path("exported")
    assert export_target("./out").path == Path("out") and export_target("me/pool").repo_id == "me/pool"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hf:", "hf: needs a dataset"),
        ("hf:org/pool@", "empty revision after '@'"),
        ("hf:org/my pool", "is not a Hugging Face repository id"),
        ("hf:a/b/c", "is not a Hugging Face repository id"),
        ("hf:org/../pool", "is not a Hugging Face repository id"),
    ],
)
def test_malformed_references_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(HubError, match=message.replace("(", r"\(")):
        parse_hub_ref(text)


def test_an_export_goes_to_a_branch_head_not_a_revision() -> None:
    with pytest.raises(HubError, match="drop '@...'"):
        export_target("me/pool@v2")


# --- export -> import round trip ----------------------------------------------------------


def test_export_to_a_folder_then_import_into_a_fresh_store_reproduces_every_env(
    tmp_path: Path, spade_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = fill_store()
    with open_store() as store:
        sources = {i: store.get_source(i) for i in before}
    run = spade("export", "--to-hub", "./shared")
    assert run.exit_code == 0, run.output
    assert "exported 5 environments (5 in train) to shared" in run.stdout
    assert sorted(p.relative_to(tmp_path / "shared").as_posix() for p in (tmp_path / "shared").rglob("*") if p.is_file()) == [
        "README.md",
        "data/train-00000-of-00001.parquet",
    ]

    use_home(tmp_path / "fresh", monkeypatch)
    code, report = import_json("hf:./shared", "--trust")
    assert code == 0
    assert [(r["origin"], r["outcome"]) for r in report] == [(f"train#{i}", "imported") for i in range(5)]
    with open_store() as store:
        after = {m.id: m for m in store.find(limit=100)}
        assert sorted(after) == sorted(before)
        for env_id, meta in before.items():
            assert comparable(after[env_id]) == comparable(meta), env_id
            assert store.get_source(env_id) == sources[env_id]
        assert store.lineage("SwapSortHard-v1")[0].id == "TowerOfHanoi-v1", "lineage kept"
        guess = store.get("GuessNumber-v1")
        assert guess.hint == "Halve the interval each turn." and guess.latest_stats.win_rate == 0.5
        assert guess.status == EnvStatus.admitted and guess.validation.passed

    code, again = import_json("hf:./shared", "--trust")
    assert code == 0 and {r["outcome"] for r in again} == {"unchanged"}, "re-import is idempotent"


def test_without_trust_what_the_dataset_calls_admitted_arrives_as_a_candidate(
    tmp_path: Path, spade_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill_store()
    assert spade("export", "--to-hub", "./shared").exit_code == 0
    use_home(tmp_path / "fresh", monkeypatch)
    code, report = import_json("hf:./shared")
    assert code == 0
    guess = next(r for r in report if r["env_id"] == "GuessNumber-v1")
    assert any("recorded as admitted in the dataset, read as a candidate" in n for n in guess["notes"])
    with open_store() as store:
        assert store.get("GuessNumber-v1").status == EnvStatus.candidate
        assert store.admitted_ids() == []


def test_the_rows_carry_the_documented_columns_and_datasets_reads_the_card(spade_home: Path, tmp_path: Path) -> None:
    fill_store()
    assert spade("export", "--to-hub", "./shared", "--include-seeds").exit_code == 0
    import datasets

    loaded = datasets.load_dataset(str(tmp_path / "shared"), cache_dir=str(tmp_path / "hf-cache"))
    assert sorted(loaded) == ["seeds", "train"]
    assert list(loaded["train"].features) == [c.name for c in COLUMNS]
    by_id = {r["id"]: r for r in loaded["train"]}
    guess = by_id["GuessNumber-v1"]
    assert (guess["status"], guess["hint"], guess["win_rate"], guess["samples"]) == (
        "admitted", "Halve the interval each turn.", 0.5, 16,
    )
    assert guess["validation_passed"] is True and by_id["SwapSort-v1"]["validation_passed"] is None
    assert by_id["SwapSortHard-v1"]["parent_ids"] == ["TowerOfHanoi-v1", "SwapSort-v1"]
    assert json.loads(guess["metadata"])["id"] == "GuessNumber-v1"
    assert hashlib.sha256(guess["code"].encode()).hexdigest() == guess["code_hash"]
    seeds = loaded["seeds"]
    assert len(seeds) > 0 and {s["status"] for s in seeds} == {"admitted"}
    with open_store() as store:
        assert not set(seeds["id"]) & {m.id for m in store.find(limit=100)}, "seeds only in their split"

    card = (tmp_path / "shared" / "README.md").read_text()
    assert f"layout_version: {LAYOUT_VERSION}" in card and "layout: spade-envs" in card
    for c in COLUMNS:
        assert f"| `{c.name}` | {c.dtype} |" in card, f"the card's schema table lists {c.name}"


def test_seeds_are_exported_only_on_request(spade_home: Path, tmp_path: Path) -> None:
    fill_store()
    assert spade("export", "--to-hub", "./plain").exit_code == 0
    assert not (tmp_path / "plain" / "data" / "seeds-00000-of-00001.parquet").exists()
    run = spade("export", "--to-hub", "./withseeds", "--include-seeds", "--domain", "tooluse")
    assert run.exit_code == 0
    seeds = pq.read_table(tmp_path / "withseeds" / "data" / "seeds-00000-of-00001.parquet").to_pylist()
    assert seeds and {s["domain"] for s in seeds} == {"tooluse"}, "filters apply to seeds too"


def test_export_never_overwrites_unless_forced_and_never_leaves_half_a_folder(spade_home: Path, tmp_path: Path) -> None:
    fill_store()
    target = tmp_path / "shared"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    run = spade("export", "--to-hub", "./shared")
    assert run.exit_code == 2 and "is not empty; pass --force" in run.output
    assert [p.name for p in target.iterdir()] == ["keep.txt"]
    assert spade("export", "--to-hub", "./shared", "--force").exit_code == 0
    assert sorted(p.name for p in target.iterdir()) == ["README.md", "data"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".shared")] == [], "no temporary folder left"


def test_export_options_that_do_not_fit_together_are_refused(spade_home: Path) -> None:
    for args, message in [
        (("out.jsonl", "--to-hub", "./x"), "export writes one target: PATH, --to-hub REPO, --to-harbor DIR or --to-atif DIR"),
        ((), "export needs a target"),
        (("out.jsonl", "--include-seeds"), "apply to --to-hub only"),
        (("--to-hub", "./x", "--private"), "apply to an upload"),
    ]:
        run = spade("export", *args)
        assert run.exit_code == 2 and message in run.output, (args, run.output)


def test_an_upload_without_the_hub_fails_clearly_after_building_everything(spade_home: Path) -> None:
    fill_store()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    run = subprocess.run(
        [str(Path(sys.executable).with_name("spade")), "export", "--to-hub", "me/pool"],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert run.returncode == 2
    assert "cannot upload to me/pool: HF_HUB_OFFLINE is set" in run.stderr + run.stdout


# --- the published pools' layouts ----------------------------------------------------------


def games_run_layout(root: Path) -> Path:
    """A training run's pool: manifest.json {summary, games} and games/gen_<NNNN>/*.py."""
    entries = []
    for i, (stem, skill) in enumerate([("guess_number", "Mathematical Reasoning"), ("swap_sort", "unlabelled")]):
        rel = f"games/gen_000{i}/game_0000{i}_000_{stem}.py"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REFERENCE_ENVS / f"{stem}.py", root / rel)
        entries.append({
            "generation": f"gen_000{i}", "step": 4 * i, "filename": Path(rel).name, "skill": skill,
            "difficulty": "medium", "path_in_dataset": rel, "has_hint": False, "reward_joined": False, "n_plays": 0,
        })
    (root / "manifest.json").write_text(json.dumps({"summary": {"n_games": 2}, "games": entries}))
    return root


def test_a_training_runs_manifest_layout_imports_with_skills_and_provenance(tmp_path: Path, spade_home: Path) -> None:
    games_run_layout(tmp_path / "run")
    code, report = import_json("hf:./run")
    assert code == 0, report
    assert [r["origin"] for r in report] == [
        "games/gen_0000/game_00000_000_guess_number.py",
        "games/gen_0001/game_00001_000_swap_sort.py",
    ]
    assert all("domain 'games' inferred from the code" in r["notes"] for r in report)
    assert not any("ignored columns" in n for r in report for n in r["notes"]), "known keys are not noise"
    with open_store() as store:
        guess = store.get("GuessNumber-v1")
        assert guess.skill == "mathematical_reasoning" and guess.domain == "games"
        assert guess.tags == ["generation:gen_0000", "step:0", "difficulty:medium"]
        assert store.get("SwapSort-v1").skill == "general", "'unlabelled' is no skill"


def test_a_pooled_tool_use_manifest_finds_files_under_their_run(tmp_path: Path, spade_home: Path) -> None:
    root = tmp_path / "tooluse"
    (root / "environments" / "qwen3-4b-a").mkdir(parents=True)
    (root / "environments" / "qwen3-4b-a" / "game_00012_000_tool_selection.py").write_text(TOOL_ENV)
    entries = [
        {"source_run": "qwen3-4b-a", "model_scale": "4B", "recipe": "blend", "skill": "Tool Selection", "step": 12,
         "filename": "game_00012_000_tool_selection.py", "mean_reward": None, "solve_rate": None, "reward_joined": False},
        {"source_run": "qwen3-4b-a", "skill": "Tool Selection", "step": 16, "filename": "game_00016_000_missing.py"},
    ]
    (root / "manifest.json").write_text(json.dumps(entries))
    code, report = import_json("hf:./tooluse")
    assert code == 1
    ok, missing = report
    assert (ok["outcome"], ok["env_id"]) == ("imported", "ShelfCountMT-v1")
    assert missing["origin"] == "manifest.json#1" and missing["outcome"] == "failed"
    assert missing["reason"] == "file 'game_00016_000_missing.py' named by the manifest is not in the dataset"
    with open_store() as store:
        meta = store.get("ShelfCountMT-v1")
        assert (meta.domain, meta.skill, meta.action_format.value) == ("tooluse", "tool_selection", "tool_call")
        assert meta.tags == ["source_run:qwen3-4b-a", "model_scale:4B", "recipe:blend", "step:12"]
        assert meta.reward_range == (-0.1, 1.0), "the tool-use domain's range"


def pool_rows() -> list[dict]:
    rows = []
    for i, code in enumerate([TOOL_ENV, (REFERENCE_ENVS / "light_switches.py").read_text()]):
        rows.append({
            "game_id": f"game_{i:06d}", "file_name": f"game_{i:06d}.py", "original_file_name": f"game_{i:04d}_x.py",
            "skill": "state_modification" if i == 0 else "logical_deduction",
            "sha256": hashlib.sha256(code.encode()).hexdigest(), "line_count": code.count("\n"),
            "byte_count": len(code.encode()), "code": code,
        })
    tampered = dict(rows[1], game_id="game_000002", code=rows[1]["code"] + "\n# edited\n")
    return [*rows, tampered]


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".parquet"])
def test_a_fixed_pool_table_imports_and_checks_each_rows_sha256(tmp_path: Path, spade_home: Path, suffix: str) -> None:
    root = tmp_path / "pool"
    (root / "data").mkdir(parents=True)
    data = root / "data" / f"train{suffix}"
    rows = pool_rows()
    if suffix == ".json":
        data.write_text(json.dumps(rows))
    elif suffix == ".jsonl":
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        pq.write_table(pa.Table.from_pylist(rows), data)
    (root / "README.md").write_text("---\nlicense: other\n---\n# a pool\n")
    code, report = import_json("hf:./pool")
    assert code == 1
    assert [r["outcome"] for r in report] == ["imported", "imported", "failed"]
    assert report[2]["reason"].startswith("sha256 ") and "does not match its code" in report[2]["reason"]
    with open_store() as store:
        tool = store.get(report[0]["env_id"])
        assert (tool.domain, tool.skill) == ("tooluse", "state_modification")
        assert tool.tags == ["game_id:game_000000", "original_file_name:game_0000_x.py"]
        assert store.get(report[1]["env_id"]).domain == "games"
        assert store.count() == 2


def test_admitting_from_a_dataset_runs_the_validation_hook(tmp_path: Path, spade_home: Path) -> None:
    root = tmp_path / "run"
    games_run_layout(root)
    (root / "games" / "gen_0001" / "game_00001_000_swap_sort.py").write_text(
        "class CrashyEnv:\n    def reset(self, seed=None):\n        return 'Say \\\\boxed{x}.', {}\n"
        "    def step(self, action):\n        raise RuntimeError('boom')\n"
        "    def solution(self):\n        return ['\\\\boxed{x}']\n"
    )
    code, report = import_json("hf:./run", "--status", "admitted")
    assert code == 1
    good, bad = report
    assert (good["outcome"], good["env_id"]) == ("imported", "GuessNumber-v1")
    assert (bad["outcome"], bad["stage"]) == ("rejected", "contract")
    with open_store() as store:
        assert store.admitted_ids() == ["GuessNumber-v1"] and store.count() == 1


# --- whole-dataset errors: specific, and nothing imported ------------------------------------


def exported(tmp_path: Path) -> Path:
    fill_store()
    assert spade("export", "--to-hub", "./shared").exit_code == 0
    return tmp_path / "shared"


def assert_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ref: str, message: str) -> None:
    use_home(tmp_path / "fresh", monkeypatch)
    run = spade("import", ref)
    assert run.exit_code == 2, run.output
    assert message in " ".join(run.output.split()), run.output
    with open_store() as store:
        assert store.count() == 0, "nothing imported"


def test_a_missing_column_is_named(tmp_path: Path, spade_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = exported(tmp_path) / "data" / "train-00000-of-00001.parquet"
    pq.write_table(pq.read_table(data).drop_columns(["metadata"]), data)
    assert_refused(tmp_path, monkeypatch, "hf:./shared", "data/train-00000-of-00001.parquet: missing column 'metadata'")


def test_a_pool_without_a_code_column_is_named(tmp_path: Path, spade_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pool").mkdir()
    (tmp_path / "pool" / "rows.jsonl").write_text(json.dumps({"game_id": "g1", "skill": "x"}) + "\n")
    assert_refused(tmp_path, monkeypatch, "hf:./pool", "rows.jsonl: missing column 'code' (looked for code, env_code")


def test_a_corrupt_parquet_file_is_named(tmp_path: Path, spade_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = exported(tmp_path) / "data" / "train-00000-of-00001.parquet"
    data.write_bytes(data.read_bytes()[: len(data.read_bytes()) // 2])
    assert_refused(tmp_path, monkeypatch, "hf:./shared", "data/train-00000-of-00001.parquet: not a readable Parquet file")


def test_a_newer_layout_is_refused_with_the_versions(tmp_path: Path, spade_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    card = exported(tmp_path) / "README.md"
    card.write_text(card.read_text().replace(f"layout_version: {LAYOUT_VERSION}", "layout_version: 99"))
    assert_refused(tmp_path, monkeypatch, "hf:./shared", f"version 99 is newer than this SPADE reads ({LAYOUT_VERSION})")


def test_a_missing_folder_and_a_folder_without_data_are_named(tmp_path: Path, spade_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert_refused(tmp_path, monkeypatch, "hf:./nowhere", "no such folder nowhere")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("hi")
    assert_refused(tmp_path, monkeypatch, "hf:./empty", "not a SPADE export (no README.md with a spade layout), no manifest.json")


# --- Hub datasets from the local Hugging Face cache, offline ---------------------------------


COMMIT = "0123456789abcdef0123456789abcdef01234567"


def cached_snapshot(cache: Path, repo_id: str, folder: Path) -> None:
    """``folder`` as huggingface_hub caches a dataset's snapshot: refs/main -> snapshots/<commit>."""
    repo = cache / ("datasets--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    shutil.copytree(folder, repo / "snapshots" / COMMIT)


def spade_offline(cache: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache)}
    return subprocess.run(
        [str(Path(sys.executable).with_name("spade")), *args], capture_output=True, text=True, env=env, timeout=120,
    )


def test_a_hub_dataset_reads_from_the_cache_offline_by_branch_or_commit_and_a_bad_revision_is_named(
    tmp_path: Path, spade_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "hf-cache"
    cached_snapshot(cache, "spade-rl/shared-pool", exported(tmp_path))
    use_home(tmp_path / "fresh", monkeypatch)

    run = spade_offline(cache, "import", "hf:spade-rl/shared-pool", "--trust", "--json")
    assert run.returncode == 0, run.stderr
    assert [r["outcome"] for r in json.loads(run.stdout)] == ["imported"] * 5
    run = spade_offline(cache, "import", f"hf:spade-rl/shared-pool@{COMMIT}", "--trust", "--json")
    assert run.returncode == 0 and {r["outcome"] for r in json.loads(run.stdout)} == {"unchanged"}

    run = spade_offline(cache, "import", "hf:spade-rl/shared-pool@v2")
    assert run.returncode == 2
    message = " ".join(run.stderr.split())
    assert "revision 'v2' of spade-rl/shared-pool is not in the local cache" in message
    assert "HF_HUB_OFFLINE is set; cached revisions: main" in message

    run = spade_offline(cache, "import", "hf:spade-rl/other-pool")
    assert run.returncode == 2
    assert "spade-rl/other-pool is not in the local cache" in " ".join(run.stderr.split())


def test_skill_labels_become_the_domains_names() -> None:
    assert normalise_skill("Multi-Step Workflows") == "multi_step_workflows"
    assert normalise_skill("API Orchestration") == "api_orchestration"
    assert normalise_skill("state_modification") == "state_modification"
    assert normalise_skill("unlabelled") is None and normalise_skill(None) is None


def test_docs_state_the_schema_the_code_writes() -> None:
    doc = (ROOT / "docs" / "hub.md").read_text()
    for c in COLUMNS:
        assert f"| `{c.name}` | {c.dtype} |" in doc, f"docs/hub.md lists {c.name}"
    assert f"version {LAYOUT_VERSION}" in doc


# --- properties ---------------------------------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(env_metadata(unique_names=True), min_size=1, max_size=3))
def test_any_metadata_survives_the_export_layout_unchanged(tmp_path: Path, metas: list[EnvMetadata]) -> None:
    hanoi = (REFERENCE_ENVS / "tower_of_hanoi.py").read_text()
    envs = [(hanoi + f"\n# {i}\n", m) for i, m in enumerate(metas)]
    envs = [(src, m.model_copy(update={"code_hash": code_hash(src)})) for src, m in envs]
    with tempfile.TemporaryDirectory(dir=tmp_path) as tmp:
        write_hub_folder(envs, Path(tmp) / "out")
        items = read_hub_items(HubRef("test", path=Path(tmp) / "out"))
        rows = pq.read_table(Path(tmp) / "out" / "data" / "train-00000-of-00001.parquet").to_pylist()
    assert [prepare(i, ImportOptions(trust=True)).metadata for i in items] == [m for _, m in envs]
    assert [prepare(i).source for i in items] == [src for src, _ in envs]
    for row, (_, m) in zip(rows, envs, strict=True):
        assert (row["id"], row["status"], row["parent_ids"], row["hint"]) == (m.id, m.status.value, m.parent_ids, m.hint)
        latest = m.latest_stats
        assert row["win_rate"] == (latest.win_rate if latest else None)
        assert row["validation_passed"] == (m.validation.passed if m.validation else None)


@given(st.text(max_size=40))
def test_a_normalised_skill_is_a_fixed_point_and_a_valid_skill(label: str) -> None:
    skill = normalise_skill(label)
    if skill is not None:
        assert normalise_skill(skill) == skill
        assert skill and len(skill) <= 120 and skill == skill.lower()
