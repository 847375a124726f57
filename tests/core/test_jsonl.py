"""spade_core.app.jsonl.read_jsonl: the one reader of a run's JSON-lines files."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from spade_core.app.jsonl import read_jsonl

_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
_objects = st.dictionaries(st.text(max_size=6), _scalars | st.lists(_scalars, max_size=3), max_size=4)
#: Lines a killed or foreign writer leaves: blank, cut off mid-object, JSON that is no object.
_junk = st.sampled_from(["", "   ", '{"iteration": 3, "loss', "[1, 2]", "42", '"text"', "null", "{", "not json"])


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(st.one_of(_objects.map(lambda o: ("row", o)), _junk.map(lambda j: ("junk", j))), max_size=12))
def test_every_object_line_is_read_in_order_and_nothing_else(tmp_path_factory, lines) -> None:
    path = tmp_path_factory.mktemp("run") / "metrics.jsonl"
    path.write_text("\n".join(json.dumps(v) if kind == "row" else v for kind, v in lines), encoding="utf-8")
    assert read_jsonl(path) == [v for kind, v in lines if kind == "row"]


def test_a_missing_file_is_no_rows(tmp_path: Path) -> None:
    assert read_jsonl(tmp_path / "evals.jsonl") == []
    assert read_jsonl(str(tmp_path / "nope" / "metrics.jsonl")) == []


def test_a_run_killed_mid_write_keeps_every_complete_line(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"iteration": 1}\n{"iteration": 2}\n{"iteration": 3, "regr', encoding="utf-8")
    assert read_jsonl(path) == [{"iteration": 1}, {"iteration": 2}]
