"""The labelled corpus through the real sandbox: every good environment passes, every
broken one is rejected at its labelled stage with its labelled reason."""

from __future__ import annotations

import pytest
from conftest import CORPUS
from spade_designer.validation import STAGE_ORDER, Reason
from spade_designer.validation.evaluate import evaluate, load_corpus


def test_the_manifest_labels_every_file_once_and_covers_every_stage():
    labels = load_corpus(CORPUS)
    good = [lab for lab in labels if lab.kind == "good"]
    bad = [lab for lab in labels if lab.kind == "bad"]
    assert len(labels) >= 60 and len(good) >= 20
    assert {lab.stage for lab in bad} == {s.value for s in STAGE_ORDER}
    assert {lab.reason for lab in bad} <= {r.value for r in Reason}
    assert all(lab.expect == "pass" for lab in good) and all(lab.expect == "reject" for lab in bad)


@pytest.fixture(scope="module")
def evaluation():
    return evaluate(CORPUS)


def test_every_good_environment_passes(evaluation):
    wrong = [(o.label.name, o.report.reasons) for o in evaluation.outcomes if o.label.kind == "good" and not o.correct]
    assert wrong == []


def test_every_broken_environment_is_rejected_at_the_right_stage_for_the_right_reason(evaluation):
    wrong = [
        (o.label.name, f"expected {o.label.stage}/{o.label.reason}", f"got {o.stage}/{o.reason}")
        for o in evaluation.outcomes
        if o.label.kind == "bad" and not o.correct
    ]
    assert wrong == []


def test_precision_and_recall_are_perfect_per_stage(evaluation):
    for row in evaluation.stage_rows():
        assert row["precision"] == 1.0 and row["recall"] == 1.0, row
    assert "| fuzz |" in evaluation.markdown()


# --- the corpus modelled on environments written elsewhere (reference habits) ----------------

CORPUS_EXT = CORPUS.parent / "corpus_ext"


def test_the_second_corpus_is_labelled_and_large_enough():
    labels = load_corpus(CORPUS_EXT)
    good = [lab for lab in labels if lab.kind == "good"]
    assert len(labels) >= 40 and len(good) >= 15
    assert {lab.reason for lab in labels if lab.kind == "bad"} <= {r.value for r in Reason}
    assert any(lab.feasibility == "unproven" for lab in good)


@pytest.fixture(scope="module")
def evaluation_ext():
    return evaluate(CORPUS_EXT)


def test_every_environment_of_the_second_corpus_gets_its_labelled_verdict_stage_and_reason(evaluation_ext):
    wrong = [
        (o.label.name, f"expected {o.label.expect} {o.label.stage}/{o.label.reason}",
         f"got {'pass' if o.report.passed else f'{o.stage}/{o.reason}'}", o.report.reasons)
        for o in evaluation_ext.mistakes()
    ]
    assert wrong == []


def test_an_unproven_environment_is_admitted_but_never_counted_feasible(evaluation_ext):
    overall = evaluation_ext.overall()
    unproven = [o for o in evaluation_ext.outcomes if o.label.feasibility == "unproven"]
    assert unproven and all(o.report.passed and not o.report.feasibility_proven for o in unproven)
    assert overall["admitted_unproven"] == len(unproven)
    assert overall["admitted_feasible"] == sum(o.label.feasibility == "proven" for o in evaluation_ext.outcomes)
