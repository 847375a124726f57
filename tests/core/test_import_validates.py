"""``spade import --status admitted`` runs every item through the validation pipeline
(real sandbox): only what passes is admitted; the rest is reported with stage and reason."""

from __future__ import annotations

import json
from pathlib import Path

from spade_core.metadata import EnvStatus

from .cli_support import open_store, spade
from .conftest import REFERENCE_ENVS

GOOD = REFERENCE_ENVS / "guess_number.py"
#: A reference-style game whose step crashes on any action that is not a boxed number.
BROKEN = '''
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


def import_json(*args: str) -> tuple[int, list[dict]]:
    run = spade("import", *args, "--json")
    return run.exit_code, json.loads(run.stdout)


def test_admitting_validates_each_item_and_admits_only_what_passes(tmp_path: Path, spade_home: Path) -> None:
    folder = tmp_path / "pool"
    folder.mkdir()
    (folder / "a_good.py").write_text(GOOD.read_text())
    (folder / "b_crashy.py").write_text(BROKEN)
    code, report = import_json(str(folder), "--domain", "games", "--status", "admitted")
    assert code == 1
    good, bad = report
    assert (good["outcome"], good["env_id"]) == ("imported", "GuessNumber-v1")
    assert (bad["outcome"], bad["stage"], bad["code"]) == ("rejected", "contract", "step_exception")
    assert bad["reason"].startswith("step_exception: ") and bad["env_id"] is None
    with open_store() as store:
        assert store.admitted_ids() == ["GuessNumber-v1"]
        assert store.count() == 1, "a rejected item is not stored"
        stored = store.get("GuessNumber-v1").validation
        assert stored is not None and stored.passed and stored.feasibility_proven


def test_the_human_report_names_stage_and_reason(tmp_path: Path, spade_home: Path) -> None:
    env = tmp_path / "crashy.py"
    env.write_text(BROKEN)
    run = spade("import", str(env), "--domain", "games", "--status", "admitted")
    assert run.exit_code == 1
    assert "rejected" in run.stdout and "contract: step_exception" in run.stdout
    assert "0 imported, 0 unchanged, 0 failed, 1 rejected by validation" in run.stdout


def test_trust_admits_without_validation(tmp_path: Path, spade_home: Path) -> None:
    env = tmp_path / "crashy.py"
    env.write_text(BROKEN)
    code, report = import_json(str(env), "--domain", "games", "--status", "admitted", "--trust")
    assert code == 0 and report[0]["outcome"] == "imported"
    with open_store() as store:
        meta = store.get(report[0]["env_id"])
        assert meta.status == EnvStatus.admitted and meta.validation is None


def test_a_rejected_candidate_stays_a_candidate(tmp_path: Path, spade_home: Path) -> None:
    env = tmp_path / "crashy.py"
    env.write_text(BROKEN)
    import_json(str(env), "--domain", "games")
    code, report = import_json(str(env), "--domain", "games", "--status", "admitted")
    assert code == 1 and report[0]["outcome"] == "rejected" and "stays candidate" in report[0]["notes"]
    with open_store() as store:
        assert store.get(report[0]["env_id"]).status == EnvStatus.candidate


def test_re_importing_code_under_another_domain_reports_the_conflict(spade_home: Path) -> None:
    import_json(str(GOOD), "--domain", "games")
    code, report = import_json(str(GOOD), "--domain", "tooluse")
    assert code == 1 and report[0]["outcome"] == "failed"
    assert report[0]["reason"].startswith("this code is already stored as GuessNumber-v1 in domain 'games', not 'tooluse'")


def test_two_near_duplicate_candidates_do_not_block_each_other(tmp_path: Path, spade_home: Path) -> None:
    twin = tmp_path / "pool"
    twin.mkdir()
    (twin / "a.py").write_text(GOOD.read_text())
    (twin / "b.py").write_text(GOOD.read_text().replace("high=64", "high=32"))
    import_json(str(twin), "--domain", "games")  # both stored as candidates
    with open_store() as store:
        assert store.count() == 2
    code, report = import_json(str(twin), "--domain", "games", "--status", "admitted")
    first, second = report
    assert first["outcome"] == "unchanged" and "status candidate -> admitted" in first["notes"]
    assert (second["outcome"], second["stage"], second["code"]) == ("rejected", "novelty", "near_duplicate")
    assert second["duplicate_of"] == first["env_id"]
    # and again: the admitted one stays, the twin is still reported as its duplicate
    code, again = import_json(str(twin), "--domain", "games", "--status", "admitted")
    assert again[0]["outcome"] == "unchanged" and again[1]["duplicate_of"] == first["env_id"]
    with open_store() as store:
        assert store.admitted_ids() == [first["env_id"]]


def test_a_tool_use_py_file_gets_the_tool_use_domain(tmp_path: Path, spade_home: Path) -> None:
    env = tmp_path / "ledger.py"
    env.write_text(
        "class LedgerEnv(ToolUseBaseEnv):\n"
        "    def reset(self, seed=None):\n        return 'go', {}\n"
    )
    code, report = import_json(str(env))
    assert code == 0 and "domain 'tooluse' inferred from the code" in report[0]["notes"]
