"""The pytest plugin: one line fuzzes a plugin's environments (checked with pytester)."""

from __future__ import annotations

from conftest import corpus_source

pytest_plugins = ["pytester"]


def test_spade_fuzz_passes_a_good_environment_and_shows_the_report_of_a_bad_one(pytester):
    pytester.makepyfile(
        good_env=corpus_source("good", "guess_number"),
        bad_env=corpus_source("bad", "f_raises_on_garbage"),
        test_envs='''
import pathlib

def test_good(spade_fuzz):
    spade_fuzz.source(pathlib.Path(__file__).with_name("good_env.py").read_text())

def test_bad(spade_fuzz):
    spade_fuzz.source(pathlib.Path(__file__).with_name("bad_env.py").read_text(), label="bad_env")
''',
    )
    result = pytester.runpytest_subprocess("--spade-examples", "40", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*bad_env: REJECTED at fuzz*", "*step_exception*", "*replay: reset(seed=*"])


def test_seed_env_tests_makes_one_test_per_seed_environment(pytester):
    from spade_core.plugins import get_plugins

    count = len(get_plugins().domain("games").seed_envs)
    pytester.makepyfile(
        test_games="from spade_designer.pytest_plugin import seed_env_tests\n\ntest_games = seed_env_tests('games')\n"
    )
    result = pytester.runpytest_subprocess("--collect-only", "-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([f"{count} tests collected*"])


def test_spade_examples_applies_to_full_validation_too(pytester):
    pytester.makepyfile(
        env=corpus_source("good", "guess_number"),
        test_envs='''
import pathlib

def test_full(spade_fuzz):
    report = spade_fuzz.source(pathlib.Path(__file__).with_name("env.py").read_text(), full=True)
    fuzz = [f for f in report.findings if f.stage == "fuzz"][0].message
    assert report.timings.keys() >= {"fuzz", "feasibility", "degenerate"}
    print("FUZZ:", fuzz)
''',
    )
    result = pytester.runpytest_subprocess("--spade-examples", "7", "-s", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*FUZZ: 7 examples,*"])
