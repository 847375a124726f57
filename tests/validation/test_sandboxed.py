"""Behaviour that needs real worker processes: killable calls, isolation of candidates."""

from __future__ import annotations

import time

from conftest import corpus_source
from spade_designer.validation import ValidationConfig, ValidationRequest, Validator, fuzz


def test_an_infinite_loop_costs_one_timeout_and_is_reported_with_its_actions():
    config = ValidationConfig(sandbox_call_timeout_s=1.0)
    with Validator(config=config) as validator:
        t0 = time.perf_counter()
        report = validator.validate(corpus_source("bad", "f_infinite_loop"))
        elapsed = time.perf_counter() - t0
        (finding,) = [f for f in report.findings if not f.ok]
        assert report.failed_stage == "fuzz" and finding.code == "call_timeout"
        assert finding.actions, "the actions up to the hanging call are reported"
        # the pool survives: the next candidate validates normally
        assert validator.validate(corpus_source("good", "hanoi")).passed
    assert elapsed < 20


def test_a_batch_mixes_good_and_broken_candidates_without_interference():
    names = [("good", "guess_number"), ("bad", "f_nan_reward"), ("good", "key_door"), ("bad", "l_reset_raises")]
    with Validator() as validator:
        reports = validator.validate_many([ValidationRequest(corpus_source(k, n)) for k, n in names])
    got = [r.failed_stage for r in reports]
    assert got == [None, "fuzz", None, "load"], [r.reasons for r in reports]


def test_fuzz_runs_only_static_load_and_fuzz():
    report = fuzz(corpus_source("good", "mastermind"), examples=30)
    assert report.passed and set(report.timings) == {"static", "load", "fuzz"}
    steps = [f for f in report.findings if f.stage == "fuzz"][0].message
    assert steps.startswith("30 examples")
