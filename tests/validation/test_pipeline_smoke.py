"""The pipeline accepts genuine environments (stage logic over the in-process double)."""

from __future__ import annotations

import pytest
from conftest import corpus_source

from spade_designer.validation import STAGE_ORDER, Validator


@pytest.mark.parametrize("name", ["guess_number", "grid_maze", "hanoi"])
def test_a_genuine_environment_passes_every_stage(inprocess_runner, name):
    report = Validator(inprocess_runner).validate(corpus_source("good", name))
    assert report.passed, report.reasons
    assert [f.stage for f in report.findings if f.code is None] == [s.value for s in STAGE_ORDER]
    assert report.feasibility_proven
    assert set(report.timings) == {s.value for s in STAGE_ORDER}
