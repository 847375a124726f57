"""``[spade.sandbox]`` reaches the workers of ``spade validate`` and ``spade fuzz``, from
``spade --config FILE`` and from the active file: an environment that allocates past
``memory_mb`` at reset fails the load stage with the sandbox's memory error (the first
stages only, so that the default run that lets it eat stays quick)."""

from __future__ import annotations

from pathlib import Path

import pytest
from spade_core.app.cli import build_app
from spade_core.metadata import ValidationReport
from typer.testing import CliRunner

FIRST_STAGES = '[validation]\nstages = ["static", "load", "contract"]\nfuzz_examples = 5\n'


def _report(*args: str) -> ValidationReport:
    result = CliRunner().invoke(build_app(), list(args))
    return ValidationReport.model_validate_json(result.stdout)


@pytest.mark.parametrize("command", [("validate",), ("fuzz", "--examples", "5")])
@pytest.mark.parametrize("where", ["--config", "active file"])
def test_validation_runs_under_the_configured_memory(
    command: tuple[str, ...],
    where: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    memory_hog_source: str,
    tight_sandbox_table: str,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("SPADE_HOME", str(home))
    monkeypatch.chdir(home)
    hog = tmp_path / "memory_hog.py"
    hog.write_text(memory_hog_source)
    (home / "spade.toml").write_text(FIRST_STAGES)
    fed = _report(*command, str(hog), "--json")
    assert fed.failed_stage is None, fed.reasons
    if where == "--config":
        tight = tmp_path / "tight.toml"
        tight.write_text(FIRST_STAGES + tight_sandbox_table)
        report = _report("--config", str(tight), *command, str(hog), "--json")
    else:
        (home / "spade.toml").write_text(FIRST_STAGES + tight_sandbox_table)
        report = _report(*command, str(hog), "--json")
    assert report.failed_stage == "load", report.reasons
    assert "memory" in " ".join(report.reasons)
