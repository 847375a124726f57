"""``spade validate`` and ``spade fuzz`` as a user runs them."""

from __future__ import annotations

import json

from conftest import CORPUS, corpus_source
from spade_core.cli import build_app
from spade_core.metadata import EnvMetadata, ValidationReport
from typer.testing import CliRunner

RUNNER = CliRunner()


def run(*args):
    return RUNNER.invoke(build_app(), list(args))


def test_validate_prints_a_report_and_exits_zero_on_a_good_environment():
    result = run("validate", str(CORPUS / "good" / "coin_change.py"))
    assert result.exit_code == 0, result.output
    assert "PASSED" in result.output and "feasibility" in result.output


def test_validate_json_is_the_report_model_and_exits_one_on_rejection():
    result = run("validate", str(CORPUS / "bad" / "g_single_shot.py"), "--json")
    assert result.exit_code == 1
    report = ValidationReport.model_validate_json(result.stdout)
    assert report.failed_stage == "degenerate" and report.findings[-1].code == "single_shot"


def test_fuzz_reports_the_shrunk_action_list():
    result = run("fuzz", str(CORPUS / "bad" / "f_raises_on_garbage.py"), "--examples", "60", "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    failing = [f for f in data["findings"] if not f["ok"]][0]
    assert failing["code"] == "step_exception" and len(failing["actions"]) == 1


def test_a_missing_file_is_a_clear_error():
    result = run("validate", "no/such/env.py")
    assert result.exit_code != 0
    assert "no such file" in (result.output + str(result.exception))


def test_validating_a_stored_environment_records_the_report(tmp_path, monkeypatch):
    from spade_core.config import load_config
    from spade_core.store import EnvStore

    monkeypatch.setenv("SPADE_HOME", str(tmp_path))
    with EnvStore.open(load_config()) as store:
        store.add(corpus_source("good", "hanoi"), EnvMetadata(name="hanoi", domain="games", skill="planning"))
    result = run("validate", "hanoi-v1")
    assert result.exit_code == 0, result.output
    with EnvStore.open(load_config()) as store:
        stored = store.get("hanoi-v1").validation
    assert stored is not None and stored.passed and stored.feasibility_proven
