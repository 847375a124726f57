"""``spade validate`` and ``spade fuzz`` as a user runs them."""

from __future__ import annotations

import json

from conftest import CORPUS, corpus_source
from spade_core.app.cli import build_app
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


def test_validate_and_fuzz_accept_a_seed_id_as_show_and_play_do(tmp_path, monkeypatch):
    monkeypatch.setenv("SPADE_HOME", str(tmp_path))  # an empty home: the seed comes from its plugin
    result = run("validate", "code_breaker")
    assert result.exit_code == 0, result.output
    assert "code_breaker-v1: PASSED" in result.output
    result = run("fuzz", "spade/code_breaker", "--examples", "5", "--json")
    assert result.exit_code == 0, result.output
    assert ValidationReport.model_validate_json(result.stdout).passed
    result = run("validate", "no_such_env_anywhere")
    assert result.exit_code == 2 and "no_such_env_anywhere" in result.output


SEEDED_CRASH = '''
class SevenEnv:
    """Breaks only in episodes reset with seed 7."""

    def reset(self, seed=None):
        self.seed = seed
        self.turn = 0
        return "Say anything.", {}

    def step(self, action):
        self.turn += 1
        if self.seed == 7:
            raise RuntimeError("seed seven")
        return "ok", 0.0, self.turn >= 3, False, {}
'''


def test_fuzz_seed_option_sets_the_seed_of_the_run(tmp_path):
    env = tmp_path / "seven.py"
    env.write_text(SEEDED_CRASH, encoding="utf-8")
    assert run("fuzz", str(env), "-n", "5").exit_code == 0
    result = run("fuzz", str(env), "-n", "5", "--seed", "7", "--json")
    assert result.exit_code == 1
    report = ValidationReport.model_validate_json(result.stdout)
    assert "seed seven" in report.reasons[0]
    again = ValidationReport.model_validate_json(run("fuzz", str(env), "-n", "5", "--seed", "7", "--json").stdout)
    assert again.reasons == report.reasons  # the same seed, the same report


def test_fuzz_examples_differ_with_the_seed():
    target = str(CORPUS / "good" / "mastermind.py")
    steps = set()
    for seed in range(4):
        report = ValidationReport.model_validate_json(run("fuzz", target, "-n", "8", "--seed", str(seed), "--json").stdout)
        steps.add([f.message for f in report.findings if f.stage == "fuzz"][0])
    assert len(steps) > 1, steps


HOSTILE_TEXT = '''
class LoudEnv:
    def reset(self, seed=None):
        return "hi", {}

    def step(self, action):
        raise ValueError("\\x1b[2J\\x1b]0;owned\\x07\\x1b[31mred\\x1b[0m \\x9b1;1H\\r\\x08done\\u202e")
'''


def test_terminal_escapes_from_environment_text_never_reach_the_output(tmp_path):
    env = tmp_path / "loud.py"
    env.write_text(HOSTILE_TEXT, encoding="utf-8")
    result = run("validate", str(env))
    assert result.exit_code == 1
    assert "red" in result.output and "done" in result.output  # the text is shown ...
    bad = [c for c in result.output if (ord(c) < 32 and c not in "\n") or 0x7F <= ord(c) <= 0x9F or c == "\u202e"]
    assert bad == []  # ... without a single control character
    data = json.loads(run("validate", str(env), "--json").stdout)
    assert "\x1b[2J" in data["reasons"][0]  # the JSON report keeps the text as it was
