"""Seeds are validated: ``spade validate --seeds`` runs every installed plugin's seeds
through the same stages as any environment, records each report by code hash under
SPADE_HOME, and ``spade show`` tells the result (it said "not validated yet" for every
seed before). The project's own seeds all pass: this test is CI running the command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from spade_core.app.catalog import seed_report
from spade_core.metadata import code_hash
from spade_core.plugins import SpadePlugins, get_plugins

from .cli_support import spade
from .test_plugin_checks import site  # noqa: F401 (the fixture)


@pytest.mark.slow
def test_every_seed_of_the_project_s_plugins_passes_and_show_tells(spade_home: Path) -> None:
    before = spade("show", "code_breaker-v1")
    assert "not validated yet (`spade validate --seeds` validates every installed seed)" in " ".join(before.stdout.split())

    validated = spade("validate", "--seeds", "--json")
    result = json.loads(validated.stdout)
    rejected = {s["id"]: s["report"]["reasons"] for s in result["seeds"] if not s["report"]["passed"]}
    assert validated.exit_code == 0 and not rejected and result["problems"] == [], rejected or result["problems"]
    domains = get_plugins().domains()
    every = {s.id for name in ("games", "tooluse") for s in domains[name].seed_envs}
    assert every <= {s["id"] for s in result["seeds"]}

    shown = json.loads(spade("show", "code_breaker-v1", "--json").stdout)["metadata"]
    assert shown["validation"]["passed"] is True and shown["validation"]["feasibility_proven"] is True
    assert "passed   feasibility proven: yes" in spade("show", "tooluse.bank_ledger-v1").stdout
    # the report belongs to the code: the hash of the seed's source names it
    source = domains["games"].seed("code_breaker").source()
    assert (spade_home / "cache" / "seed-validation" / f"{code_hash(source)}.json").is_file()
    assert seed_report(code_hash(source + "\n# changed\n")) is None


def test_a_rejected_seed_and_a_plugin_problem_fail_the_command(site: Path, spade_home: Path) -> None:  # noqa: F811
    plugins = SpadePlugins()
    checked = spade("validate", "--seeds", "--domain", "regexes", "--json", plugins=plugins)
    assert checked.exit_code == 1
    result = json.loads(checked.stdout)
    verdicts = {s["id"]: s["report"] for s in result["seeds"]}
    assert set(verdicts) == {"regex_match-v1", "regex_bad_reward-v1", "regex_hang-v1"}
    assert verdicts["regex_match-v1"]["passed"]
    bad = verdicts["regex_bad_reward-v1"]
    assert not bad["passed"] and bad["failed_stage"] == "fuzz" and "1.5" in bad["reasons"][0]
    assert verdicts["regex_hang-v1"]["passed"]  # it hangs only on "hang", which no probe sends
    assert {p["seed"] for p in result["problems"]} >= {"regex_hard", "regex_twin", "regex_typo"}
    # a single seed validated by id is recorded too, and shown
    one = spade("validate", "regex_match-v1", plugins=plugins)
    assert one.exit_code == 0, one.output
    assert "passed   feasibility proven: yes" in spade("show", "regex_match-v1", plugins=plugins).stdout


def test_seeds_and_a_target_are_one_or_the_other(spade_home: Path) -> None:
    both = spade("validate", "code_breaker-v1", "--seeds")
    assert both.exit_code == 2 and "--seeds validates every installed seed: give no TARGET" in both.stderr
    neither = spade("validate")
    assert neither.exit_code == 2 and "give an environment to validate (TARGET), or --seeds" in neither.stderr
    unknown = spade("validate", "--seeds", "--domain", "chess")
    assert unknown.exit_code == 2 and "unknown domain 'chess'" in unknown.stderr


def test_a_passed_fuzz_says_feasibility_was_not_checked(spade_home: Path) -> None:
    fuzzed = spade("fuzz", "code_breaker-v1", "--examples", "20")
    text = " ".join(fuzzed.stdout.split())
    assert fuzzed.exit_code == 0 and "PASSED" in text
    assert "feasibility not checked (spade validate replays solution())" in text and "unproven" not in text
    validated = " ".join(spade("validate", "code_breaker-v1").stdout.split())
    assert "feasibility proven" in validated  # the stage ran there
