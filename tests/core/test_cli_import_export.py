"""``spade import`` and ``spade export``: per-item reports, idempotent re-import, formats
that round-trip, and clear errors for whole-batch problems."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from spade_core.metadata import EnvMetadata, EnvStatus, code_hash

from .cli_support import open_store, spade
from .conftest import BROKEN_ENVS, POOLS, REFERENCE_ENVS

FIXTURE_IDS = ["GuessNumber-v1", "LightSwitches-v1", "SwapSort-v1", "TowerOfHanoi-v1"]


def import_json(*args: str) -> tuple[int, list[dict]]:
    run = spade("import", *args, "--json")
    return run.exit_code, json.loads(run.stdout)


# --- importing folders and files -----------------------------------------------------------


def test_a_folder_of_reference_envs_imports_every_file(spade_home: Path) -> None:
    code, report = import_json(str(REFERENCE_ENVS), "--domain", "games", "--status", "admitted")
    assert code == 0
    assert [r["outcome"] for r in report] == ["imported"] * 4
    assert sorted(r["env_id"] for r in report) == FIXTURE_IDS
    with open_store() as store:
        assert sorted(store.admitted_ids()) == FIXTURE_IDS
        meta = store.get("TowerOfHanoi-v1")
        assert meta.class_name == "TowerOfHanoiEnv"
        assert meta.domain == "games" and meta.skill == "general"
        assert meta.description.startswith("Move a stack of disks"), "taken from the class docstring"
        source = (REFERENCE_ENVS / "tower_of_hanoi.py").read_text()
        assert store.get_source("TowerOfHanoi-v1") == source
        assert meta.code_hash == code_hash(source)


def test_re_import_is_idempotent(spade_home: Path) -> None:
    import_json(str(REFERENCE_ENVS), "--domain", "games")
    code, report = import_json(str(REFERENCE_ENVS), "--domain", "games")
    assert code == 0
    assert [r["outcome"] for r in report] == ["unchanged"] * 4
    with open_store() as store:
        assert store.count() == 4


def test_re_import_with_a_status_promotes_the_stored_env(spade_home: Path) -> None:
    import_json(str(REFERENCE_ENVS / "swap_sort.py"), "--domain", "games")
    _, report = import_json(str(REFERENCE_ENVS / "swap_sort.py"), "--domain", "games", "--status", "admitted")
    assert report[0]["outcome"] == "unchanged"
    assert "status candidate -> admitted" in report[0]["notes"]
    with open_store() as store:
        assert store.get("SwapSort-v1").status == EnvStatus.admitted


def test_broken_files_are_reported_and_the_rest_still_imports(tmp_path: Path, spade_home: Path) -> None:
    mixed = tmp_path / "mixed"
    shutil.copytree(REFERENCE_ENVS, mixed)
    for f in BROKEN_ENVS.glob("*.py"):
        shutil.copy(f, mixed)
    code, report = import_json(str(mixed), "--domain", "games")
    assert code == 1, "a batch with failures exits 1"
    by_origin = {r["origin"]: r for r in report}
    assert by_origin["syntax_error.py"]["outcome"] == "failed"
    assert by_origin["syntax_error.py"]["reason"] == "syntax error at line 2, column 31: expected ':'"
    assert by_origin["no_env_class.py"]["reason"] == "no top-level class whose name ends in 'Env'"
    assert sum(r["outcome"] == "imported" for r in report) == 4
    with open_store() as store:
        assert store.count() == 4


def test_the_text_report_lists_every_item_and_a_summary(tmp_path: Path, spade_home: Path) -> None:
    run = spade("import", str(BROKEN_ENVS), "--domain", "games")
    assert run.exit_code == 1
    assert "syntax_error.py" in run.stdout and "expected ':'" in run.stdout
    assert "no_env_class.py" in run.stdout
    assert "0 imported, 0 unchanged, 2 failed" in run.stdout


def test_a_published_style_jsonl_pool_reports_each_row(spade_home: Path) -> None:
    code, report = import_json(str(POOLS / "mixed_pool.jsonl"), "--domain", "games")
    assert code == 1
    outcomes = [(r["origin"], r["outcome"], r["env_id"]) for r in report]
    assert outcomes[0] == ("mixed_pool.jsonl:1", "imported", "tower_of_hanoi_3-v1"), "env_name sanitised"
    assert outcomes[1] == ("mixed_pool.jsonl:2", "imported", "GuessNumber-v1"), "name derived from the class"
    reasons = {r["origin"]: r["reason"] for r in report if r["outcome"] == "failed"}
    assert "max_turns: Input should be greater than or equal to 1" in reasons["mixed_pool.jsonl:3"]
    assert "difficulty: Input should be less than or equal to 1" in reasons["mixed_pool.jsonl:3"]
    assert reasons["mixed_pool.jsonl:4"].startswith("malformed JSON")
    assert reasons["mixed_pool.jsonl:5"].startswith("no code (looked for a column named code, env_code")
    assert reasons["mixed_pool.jsonl:6"] == "syntax error at line 2, column 14: '(' was never closed"
    with open_store() as store:
        hanoi = store.get("tower_of_hanoi_3-v1")
        assert (hanoi.skill, hanoi.description) == ("planning", "Classic three-peg puzzle")
        assert store.get("GuessNumber-v1").difficulty == 0.3


def test_a_py_file_without_a_domain_gets_the_one_its_code_implies(spade_home: Path) -> None:
    code, report = import_json(str(REFERENCE_ENVS / "guess_number.py"))
    assert code == 0
    assert report[0]["outcome"] == "imported" and "domain 'games' inferred from the code" in report[0]["notes"]
    with open_store() as store:
        assert store.get("GuessNumber-v1").domain == "games"


def test_a_py_file_whose_code_names_no_format_says_so_about_files(tmp_path: Path, spade_home: Path) -> None:
    env = tmp_path / "plain.py"
    env.write_text("class PlainEnv:\n    def reset(self, seed=None):\n        return 'hi', {}\n")
    code, report = import_json(str(env))
    assert code == 1
    reason = report[0]["reason"]
    assert reason.startswith("no domain: no metadata file (plain.json) names one") and "pass --domain" in reason
    assert "column" not in reason


def test_a_pool_row_without_a_domain_says_to_pass_one(tmp_path: Path, spade_home: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"code": (REFERENCE_ENVS / "guess_number.py").read_text()}) + "\n")
    code, report = import_json(str(pool))
    assert code == 1
    assert report[0]["reason"] == "no domain: the data has no 'domain' column; pass --domain"


def test_a_derived_name_taken_by_other_code_gets_a_hash_suffix(tmp_path: Path, spade_home: Path) -> None:
    import_json(str(REFERENCE_ENVS / "guess_number.py"), "--domain", "games")
    variant = tmp_path / "guess_number.py"
    variant.write_text((REFERENCE_ENVS / "guess_number.py").read_text().replace("high=64", "high=32"))
    _, report = import_json(str(variant), "--domain", "games")
    suffix = code_hash(variant.read_text())[:8]
    assert report[0]["outcome"] == "imported"
    assert report[0]["env_id"] == f"GuessNumber_{suffix}-v1"
    _, again = import_json(str(variant), "--domain", "games")
    assert (again[0]["outcome"], again[0]["env_id"]) == ("unchanged", f"GuessNumber_{suffix}-v1")


def test_an_explicit_name_taken_by_other_code_fails_unless_new_version(tmp_path: Path, spade_home: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    a = (REFERENCE_ENVS / "swap_sort.py").read_text()
    b = a.replace("size=5", "size=6")
    pool.write_text(
        json.dumps({"name": "sorter", "code": a, "domain": "games"}) + "\n"
        + json.dumps({"name": "sorter", "code": b, "domain": "games"}) + "\n"
    )
    code, report = import_json(str(pool))
    assert code == 1
    assert report[0]["outcome"] == "imported"
    assert report[1]["reason"].startswith("sorter-v1 already exists with different code (use --new-version")
    code, report = import_json(str(pool), "--new-version")
    assert code == 0
    assert [(r["outcome"], r["env_id"]) for r in report] == [("unchanged", "sorter-v1"), ("imported", "sorter-v2")]


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: p / "missing", "no such file or folder"),
        (lambda p: (p / "pool.csv").write_text("a,b") and p / "pool.csv", "unsupported file type '.csv'"),
        (lambda p: (p / "empty").mkdir() or p / "empty", "holds no .py, .jsonl or .parquet files"),
    ],
)
def test_unreadable_inputs_are_one_red_line_and_exit_2(tmp_path: Path, spade_home: Path, make, message: str) -> None:
    run = spade("import", str(make(tmp_path)), "--domain", "games")
    assert run.exit_code == 2
    assert run.stderr.startswith("error: ") and message in run.stderr
    assert "Traceback" not in run.output


def test_a_corrupt_store_is_reported_clearly(spade_home: Path) -> None:
    (spade_home / "store.db").write_bytes(b"this is not a database at all" * 100)
    run = spade("import", str(REFERENCE_ENVS), "--domain", "games")
    assert run.exit_code == 2
    assert run.stderr.startswith("error: ")
    assert "store.db" in run.stderr
    assert "Traceback" not in run.output


# --- exporting and round trips -------------------------------------------------------------


def _stored() -> dict[str, tuple[str, EnvMetadata]]:
    with open_store() as store:
        return {m.id: (store.get_source(m.id), m) for m in store.find()}


def _seed_store_with_history() -> None:
    """Imported envs plus the history an export must carry: status, stats, lineage, hint."""
    from spade_core.metadata import StatsSnapshot, ValidationReport

    import_json(str(REFERENCE_ENVS), "--domain", "games", "--status", "admitted")
    with open_store() as store:
        store.record_stats("SwapSort-v1", StatsSnapshot(policy_snapshot="step-4", samples=32, win_rate=0.5, regret=0.2))
        store.set_validation("SwapSort-v1", ValidationReport(passed=True, feasibility_proven=True))
        store.set_hint("SwapSort-v1", "Fix the smallest element first.")
        child = EnvMetadata(name="SwapSortHard", domain="games", skill="sorting", parent_ids=["SwapSort-v1"])
        store.add((REFERENCE_ENVS / "swap_sort.py").read_text().replace("size=5", "size=7"), child)


@pytest.mark.parametrize("fmt, target", [("jsonl", "pool.jsonl"), ("parquet", "pool.parquet"), ("dir", "pool")])
def test_export_then_import_into_a_fresh_store_reproduces_it(
    fmt: str, target: str, tmp_path: Path, spade_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed_store_with_history()
    before = _stored()
    out = tmp_path / target
    run = spade("export", str(out), "--format", fmt)
    assert run.exit_code == 0, run.output
    assert f"exported {len(before)} environments" in run.stdout

    fresh = tmp_path / "fresh-home"
    fresh.mkdir()
    monkeypatch.setenv("SPADE_HOME", str(fresh))
    code, report = import_json(str(out), "--trust")  # the statuses it records are kept only when trusted
    assert code == 0, report
    assert {r["outcome"] for r in report} == {"imported"}
    assert _stored() == before, "sources and complete metadata come back equal"
    with open_store() as store:
        assert [m.id for m in store.lineage("SwapSortHard-v1")] == ["SwapSort-v1"]


def test_export_filters_and_published_columns(tmp_path: Path, spade_home: Path) -> None:
    _seed_store_with_history()
    out = tmp_path / "admitted.jsonl"
    assert spade("export", str(out), "--status", "admitted").exit_code == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["metadata"]["id"] for r in rows) == FIXTURE_IDS
    assert set(rows[0]) == {"code", "name", "domain", "skill", "description", "metadata"}


def test_export_never_overwrites_without_force(tmp_path: Path, spade_home: Path) -> None:
    import_json(str(REFERENCE_ENVS), "--domain", "games")
    out = tmp_path / "pool.jsonl"
    out.write_text("precious\n")
    run = spade("export", str(out))
    assert run.exit_code == 2 and "exists; pass --force" in run.stderr
    assert out.read_text() == "precious\n"
    assert spade("export", str(out), "--force").exit_code == 0
    assert len(out.read_text().splitlines()) == 4


def test_export_format_is_inferred_or_must_be_given(tmp_path: Path, spade_home: Path) -> None:
    run = spade("export", str(tmp_path / "pool.txt"))
    assert run.exit_code == 2 and "pass --format jsonl|parquet|dir" in run.stderr


def test_an_edited_export_is_caught_by_its_code_hash(tmp_path: Path, spade_home: Path, monkeypatch) -> None:
    import_json(str(REFERENCE_ENVS / "swap_sort.py"), "--domain", "games")
    out = tmp_path / "dir"
    spade("export", str(out), "--format", "dir")
    py = out / "SwapSort-v1.py"
    py.write_text(py.read_text() + "\n# edited\n")
    monkeypatch.setenv("SPADE_HOME", str(tmp_path))
    code, report = import_json(str(out))
    assert code == 1
    assert "code_hash in the metadata does not match the code" in report[0]["reason"]


def test_decisions_inside_one_file_see_the_items_before_them(tmp_path: Path, spade_home: Path) -> None:
    """New items are written in batches; an item must still see every earlier one."""
    guess = (REFERENCE_ENVS / "guess_number.py").read_text()
    variant = guess.replace("high=64", "high=48")
    sort = (REFERENCE_ENVS / "swap_sort.py").read_text()
    rows = [
        {"code": guess},                      # derived name GuessNumber
        {"code": variant},                    # same class, other code: hash suffix
        {"code": guess},                      # the first again: unchanged
        {"name": "s", "code": sort},
        {"name": "s", "code": sort.replace("size=5", "size=4")},  # explicit name clash
    ]
    pool = tmp_path / "pool.jsonl"
    pool.write_text("".join(json.dumps({**r, "domain": "games"}) + "\n" for r in rows))
    code, report = import_json(str(pool))
    assert code == 1
    suffix = code_hash(variant)[:8]
    assert [(r["outcome"], r["env_id"]) for r in report] == [
        ("imported", "GuessNumber-v1"),
        ("imported", f"GuessNumber_{suffix}-v1"),
        ("unchanged", "GuessNumber-v1"),
        ("imported", "s-v1"),
        ("failed", None),
    ]
    with open_store() as store:
        assert store.count() == 3


def test_a_clash_written_by_another_process_mid_import_is_an_item_failure(tmp_path: Path, spade_home: Path) -> None:
    """Into an empty store, new items are queued without lookups; when another writer adds
    a clashing name meanwhile, the batch is decided again against the store."""
    from spade_core.app.importer import ImportOptions, import_items, read_items

    sort = (REFERENCE_ENVS / "swap_sort.py").read_text()
    pool = tmp_path / "pool.jsonl"
    pool.write_text(
        json.dumps({"name": "first", "code": "not python ("}) + "\n"
        + json.dumps({"name": "clash", "code": sort}) + "\n"
        + json.dumps({"name": "fine", "code": (REFERENCE_ENVS / "guess_number.py").read_text()}) + "\n"
    )

    def other_writer(outcome) -> None:  # runs after the first item, before the batched write
        if outcome.origin == "pool.jsonl:1":
            with open_store() as other:
                other.add(sort.replace("size=5", "size=8"), EnvMetadata(name="clash", domain="games", skill="s"))

    with open_store() as store:
        report = import_items(store, read_items(pool), ImportOptions(domain="games"), on_item=other_writer)
    outcomes = [(o.origin, o.outcome, o.env_id) for o in report.outcomes]
    assert outcomes == [
        ("pool.jsonl:1", "failed", None),
        ("pool.jsonl:2", "failed", None),
        ("pool.jsonl:3", "imported", "fine-v1"),
    ]
    assert "clash-v1 already exists with different code" in (report.outcomes[1].reason or "")
