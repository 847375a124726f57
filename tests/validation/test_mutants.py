"""The mutation corpus: sound environments (the seed games, environments written the way
others write them) and their mutants, one known semantic defect each, with and without
``solution()`` (:mod:`mutants.operators`). Every parent must pass ``spade validate`` and
``spade fuzz`` as a file; the mutants must be rejected by one of them.

The suite runs a sample (two mutants per class and variant, drawn across the parents);
``python -m bench.bench_mutants`` runs them all and writes the score per class to
``bench/results/mutation-score.md``.
"""

from __future__ import annotations

import pytest
from mutants.corpus import Verdict, build, judge, parents, table
from mutants.operators import CLASSES, WITHOUT_SOLUTION, mutants

#: Hypothesis examples of the fuzz run here (``spade fuzz`` takes 200; the bench does too).
EXAMPLES = 50


@pytest.fixture(scope="module")
def corpus():
    return build(per_class=2)


def test_every_operator_applies_to_several_parents_and_yields_source_that_compiles():
    counts: dict[str, int] = {}
    for parent in parents():
        for klass, _op, _with, source in mutants(parent.source):
            compile(source, f"{parent.name}.{klass}", "exec")
            counts[klass] = counts.get(klass, 0) + 1
    assert set(counts) == set(CLASSES)
    assert min(counts.values()) >= 5, counts


def test_the_sample_holds_mutants_of_every_class_that_differ_from_their_parents(corpus):
    _parents, kept = corpus
    classes = {(m.klass, m.with_solution) for m in kept}
    expected = {(k, True) for k in CLASSES} | {(k, False) for k in WITHOUT_SOLUTION}
    assert classes == expected
    assert {m.parent for m in kept} & {p.name for p in _parents if p.origin == "seed game"}
    assert {m.parent for m in kept} & {p.name for p in _parents if p.origin == "written elsewhere"}


def test_no_parent_is_rejected():
    verdicts = judge([(p.name, "parent", p.source) for p in parents()], fuzz_examples=EXAMPLES)
    assert [(v.name, v.reason) for v in verdicts if v.rejected] == []


def test_validate_and_fuzz_reject_nine_in_ten_mutants_of_the_sample(corpus):
    _parents, kept = corpus
    verdicts: list[Verdict] = judge(
        [(m.name, m.klass, m.source) for m in kept], fuzz_examples=EXAMPLES
    )
    rows = table(verdicts)
    missed = [v.name for v in verdicts if not v.rejected]
    assert rows[-1]["score"] >= 0.9, (rows[-1], missed)
