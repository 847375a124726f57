"""The pipeline's contract, stage by stage (stage logic over the in-process TEST DOUBLE;
the real sandbox is exercised by test_sandboxed.py and test_corpus.py)."""

from __future__ import annotations

import pytest
from conftest import corpus_source
from spade_core.metadata import EnvMetadata
from spade_designer.validation import (
    STAGE_ORDER,
    NoveltyIndex,
    Reason,
    Stage,
    ValidationConfig,
    ValidationInputError,
    ValidationRequest,
    Validator,
)


def failing(report):
    (finding,) = [f for f in report.findings if not f.ok]
    return finding


@pytest.mark.parametrize("name", ["guess_number", "grid_maze", "tool_shop"])
def test_a_genuine_environment_passes_every_stage(inprocess_runner, name):
    report = Validator(inprocess_runner).validate(corpus_source("good", name))
    assert report.passed, report.reasons
    assert list(dict.fromkeys(f.stage for f in report.findings)) == [s.value for s in STAGE_ORDER]
    assert all(f.ok for f in report.findings)
    assert report.feasibility_proven
    assert set(report.timings) == {s.value for s in STAGE_ORDER}


def test_the_first_failure_stops_the_pipeline(inprocess_runner):
    report = Validator(inprocess_runner).validate(corpus_source("bad", "fe_solution_off_by_one"))
    assert not report.passed
    assert report.failed_stage == "feasibility"
    assert failing(report).code == Reason.solution_fails.value
    assert "degenerate" not in report.timings and "novelty" not in report.timings
    assert report.reasons[0].startswith("solution_fails: ")


def test_a_static_rejection_starts_no_sandbox():
    validator = Validator()  # no pool given: one would be created on first need
    report = validator.validate("class BrokenEnv:\n    def reset(self)\n")
    assert report.failed_stage == "static" and failing(report).code == "syntax_error"
    assert validator._pool is None


def test_a_banned_import_is_named_with_its_line():
    report = Validator().validate(corpus_source("bad", "s_banned_import_os"))
    f = failing(report)
    assert f.code == "banned_import"
    assert f.message.startswith("line 2:") and "os" in f.message


def test_the_reported_actions_replay_the_failure(inprocess_runner):
    """A fuzz failure comes back as (seed, actions) that reproduce it from reset(seed)."""
    source = corpus_source("bad", "f_raises_on_empty")
    report = Validator(inprocess_runner).validate(source)
    f = failing(report)
    assert report.failed_stage == "fuzz" and f.code == "step_exception"
    assert f.actions and len(f.actions) == 1, "the failing example is shrunk to the one bad action"
    handle = inprocess_runner.spawn(source)
    inprocess_runner.reset(handle, f.seed)
    for action in f.actions[:-1]:
        inprocess_runner.step(handle, action)
    with pytest.raises(Exception, match="IndexError"):
        inprocess_runner.step(handle, f.actions[-1])


def test_missing_solution_passes_as_feasibility_unproven(inprocess_runner):
    report = Validator(inprocess_runner).validate(corpus_source("good", "counting_nosolution"))
    assert report.passed and not report.feasibility_proven
    assert any(f.code == "feasibility_unproven" for f in report.findings)


def test_declared_nondeterminism_skips_the_determinism_checks(inprocess_runner):
    source = corpus_source("bad", "d_global_random_step")
    meta = EnvMetadata(name="windy", domain="test", skill="test", nondeterministic=True)
    report = Validator(inprocess_runner).validate(source, metadata=meta)
    det = [f for f in report.findings if f.stage == "determinism"]
    assert det and det[0].ok and det[0].message.startswith("skipped")
    assert report.failed_stage != "determinism"


def test_the_hint_argument_is_checked_for_leakage(inprocess_runner):
    source = corpus_source("bad", "g_hint_leak_code")
    validator = Validator(inprocess_runner)
    assert validator.validate(source, hint="Digits repeat? No.").passed
    leaked = validator.validate(source, hint="The code is 6666.")  # seed 0's
    assert leaked.failed_stage == "degenerate" and failing(leaked).code == "hint_leakage"


def test_a_near_duplicate_is_rejected_with_its_twin(inprocess_runner):
    index = NoveltyIndex()
    index.add("guess_number-v1", corpus_source("good", "guess_number"))
    validator = Validator(inprocess_runner, novelty=index)
    report = validator.validate(corpus_source("bad", "n_dup_guess_number"))
    assert report.failed_stage == "novelty" and report.duplicate_of == "guess_number-v1"
    # re-validating the stored environment itself is not a duplicate of itself
    own = EnvMetadata(name="guess_number", domain="test", skill="test")
    assert validator.validate(corpus_source("good", "guess_number"), metadata=own).passed


def test_stages_can_be_switched_off(inprocess_runner):
    config = ValidationConfig(stages=(Stage.static, Stage.load))
    report = Validator(inprocess_runner, config).validate(corpus_source("bad", "f_raises_on_empty"))
    assert report.passed and set(report.timings) == {"static", "load"}


def test_validate_many_keeps_the_order_of_the_batch(inprocess_runner):
    names = [("good", "hanoi"), ("bad", "l_init_crash"), ("good", "coin_change"), ("bad", "s_syntax_error")]
    requests = [ValidationRequest(corpus_source(k, n)) for k, n in names]
    reports = Validator(inprocess_runner).validate_many(requests, max_workers=2)
    assert [r.failed_stage for r in reports] == [None, "load", None, "static"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"stages": (Stage.load, Stage.static)}, "pipeline order"),
        ({"sandbox_call_timeout_s": 0.1, "call_time_bound_s": 0.5}, "sandbox_call_timeout_s"),
        ({"seeds": ()}, "at least one seed"),
        ({"fuzz_min_steps": 9, "fuzz_max_steps": 3}, "fuzz_min_steps"),
        ({"novelty_threshold": 1.5}, "less than or equal"),
    ],
)
def test_bad_configuration_is_refused_with_the_reason(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ValidationConfig(**kwargs)


def test_bad_arguments_raise_a_specific_error(inprocess_runner):
    validator = Validator(inprocess_runner)
    with pytest.raises(ValidationInputError, match="source must be str"):
        validator.validate(b"class XEnv: pass")  # type: ignore[arg-type]
    with pytest.raises(ValidationInputError, match="unknown domain 'no-such-domain'"):
        validator.validate(corpus_source("good", "hanoi"), domain="no-such-domain")


@pytest.mark.parametrize(
    ("source", "code"),
    [
        ("class AEnv:\n    def reset(self): pass\n    def step(self, a): pass\n\x00", "syntax_error"),
        ("x = (" * 200 + ")" * 200, "syntax_error"),
        ("import os.path\nclass AEnv:\n    def reset(self): pass\n    def step(self, a): pass\n", "banned_import"),
        ("from . import x\nclass AEnv:\n    def reset(self): pass\n    def step(self, a): pass\n", "banned_import"),
        ("class BaseEnv:\n    def reset(self): pass\n    def step(self, a): pass\nclass AEnv(BaseEnv):\n    pass\n", None),
        ("class AEnv:\n    pass\n", "no_env_class"),
    ],
)
def test_static_verdicts_on_edge_cases(source, code):
    report = Validator(config=ValidationConfig(stages=(Stage.static,))).validate(source)
    if code is None:
        assert report.passed, report.reasons
    else:
        assert report.failed_stage == "static" and failing(report).code == code


def test_the_novelty_index_follows_the_store(tmp_path, inprocess_runner):
    from spade_core.store import EnvStore

    with EnvStore(f"sqlite:///{tmp_path / 'store.db'}") as store:
        validator = Validator(inprocess_runner)
        assert validator.validate(corpus_source("bad", "n_dup_hanoi"), store=store).passed
        store.add(corpus_source("good", "hanoi"), EnvMetadata(name="hanoi", domain="games", skill="planning"))
        report = validator.validate(corpus_source("bad", "n_dup_hanoi"), store=store)
        assert report.failed_stage == "novelty" and report.duplicate_of == "hanoi-v1"
        assert validator.novelty.sync(store) == 0  # unchanged store: nothing re-read
