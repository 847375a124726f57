"""validate_many: a batch runs in validator processes and gives, candidate for candidate,
the reports of one-by-one validation; a batch's candidates are novel against each other."""

from __future__ import annotations

from conftest import corpus_source
from spade_core.metadata import EnvMetadata, ValidationReport
from spade_core.store import EnvStore
from spade_designer.validation import ValidationRequest, Validator

#: Twins of the near-duplicates below, stored before the batch runs.
STORED = ["hanoi", "guess_number"]
#: A labelled subset: good ones and one broken candidate per sandbox stage and novelty.
BATCH = [
    ("good", "key_door"),
    ("bad", "s_syntax_error"),
    ("bad", "l_reset_raises"),
    ("bad", "c_obs_not_str"),
    ("good", "mastermind"),
    ("bad", "d_state_across_resets"),  # deterministic: its report is reproducible
    ("bad", "f_nan_reward"),
    ("bad", "fe_solution_off_by_one"),
    ("bad", "g_single_shot"),
    ("bad", "n_dup_hanoi"),
    ("good", "tool_shop"),
]


def comparable(report: ValidationReport) -> dict:
    """Everything in a report but wall-clock facts (timings, when)."""
    return report.model_dump(exclude={"timings", "validated_at"})


def request(kind: str, name: str) -> ValidationRequest:
    return ValidationRequest(corpus_source(kind, name), EnvMetadata(name=name, domain="corpus", skill=kind))


def test_a_batch_gives_the_reports_of_one_by_one_validation(tmp_path):
    store = EnvStore(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        for name in STORED:
            store.add(corpus_source("good", name), EnvMetadata(name=name, domain="corpus", skill="good"))
        requests = [request(k, n) for k, n in BATCH]
        with Validator() as validator:
            one_by_one = [validator.validate(r.source, metadata=r.metadata, store=store) for r in requests]
            batch = validator.validate_many(requests, store=store, max_workers=2)
            assert validator._processes is not None, "the batch ran in validator processes"
    finally:
        store.close()
    assert [r.failed_stage for r in batch] == [
        None, "static", "load", "contract", None, "determinism", "fuzz", "feasibility", "degenerate", "novelty", None,
    ], [r.reasons for r in batch]
    for (_kind, name), mine, theirs in zip(BATCH, batch, one_by_one, strict=True):
        assert comparable(mine) == comparable(theirs), name
    assert batch[9].duplicate_of == EnvMetadata(name="hanoi", domain="corpus", skill="good").id


def test_candidates_of_one_batch_are_checked_against_each_other():
    hanoi, copy = corpus_source("good", "hanoi"), corpus_source("bad", "n_dup_hanoi")
    with Validator() as validator:
        reports = validator.validate_many([hanoi, copy, corpus_source("good", "key_door")], max_workers=2)
        assert len(validator.novelty) == 0, "batch peers do not enter the store's index"
        again = validator.validate_many([copy], max_workers=2)
    assert [r.failed_stage for r in reports] == [None, "novelty", None]
    assert reports[1].duplicate_of == "batch[0]"
    (finding,) = [f for f in reports[1].findings if not f.ok]
    assert finding.code == "near_duplicate" and finding.details["measure"] == "code"
    assert again[0].passed, "a later batch does not see an earlier batch's candidates"


def test_a_batch_with_an_injected_pool_runs_in_threads_with_the_same_novelty_rule(inprocess_runner):
    hanoi, copy = corpus_source("good", "hanoi"), corpus_source("bad", "n_dup_hanoi")
    validator = Validator(pool=inprocess_runner)
    reports = validator.validate_many([hanoi, copy])
    assert validator._processes is None
    assert [r.failed_stage for r in reports] == [None, "novelty"] and reports[1].duplicate_of == "batch[0]"


def test_a_validator_process_killed_between_batches_costs_nothing_but_a_restart():
    import os
    import signal

    sources = [corpus_source("good", "key_door"), corpus_source("bad", "f_nan_reward")]
    with Validator() as validator:
        first = validator.validate_many(sources, max_workers=2)
        children = list(validator._processes._executor._processes)  # the children's pids
        os.kill(children[0], signal.SIGKILL)
        second = validator.validate_many(sources, max_workers=2)
        third = validator.validate_many(sources, max_workers=2)
    for reports in (first, second, third):
        assert [r.failed_stage for r in reports] == [None, "fuzz"], [r.reasons for r in reports]
    assert [comparable(r) for r in second] == [comparable(r) for r in first]


def test_an_injected_default_sandbox_pool_is_rebuilt_in_the_validator_processes():
    from spade_sandbox.launcher import SandboxLauncher

    pool = SandboxLauncher().pool(call_timeout_s=1.5)
    limits = pool.limits
    with pool, Validator(pool) as validator:
        reports = validator.validate_many([corpus_source("good", "key_door"), corpus_source("bad", "l_reset_raises")])
        assert validator._processes is not None and validator._processes.recipe.limits == limits
    assert [r.failed_stage for r in reports] == [None, "load"]


def test_only_a_pool_a_child_can_rebuild_exactly_has_a_recipe(inprocess_runner):
    from spade_core.sandbox_settings import SandboxSettings
    from spade_designer.validation.processes import pool_recipe
    from spade_sandbox.launcher import SandboxLauncher

    assert pool_recipe(inprocess_runner) is None
    assert pool_recipe(SandboxLauncher().pool(keep_spare=False)) is None
    assert pool_recipe(SandboxLauncher().program_pool()) is None
    recipe = pool_recipe(SandboxLauncher(SandboxSettings(allow_insecure=True)).pool())
    assert recipe is not None and recipe.allow_insecure
