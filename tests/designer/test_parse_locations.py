"""The designer's parse errors say where, as every other one does (spade_core.locations)."""

from __future__ import annotations

import json

import pytest
from spade_designer.corpus.files import JsonlCorpus
from spade_designer.editing import EditApplyError, replace_methods
from spade_designer.errors import CorpusError

PARENT = "class CountEnv:\n    def reset(self, seed=None):\n        return 'x', {}\n"


def test_a_rewritten_method_that_does_not_parse_names_line_and_column() -> None:
    with pytest.raises(EditApplyError) as caught:
        replace_methods(PARENT, "def step(self, action:\n    return 1\n", "CountEnv")
    assert str(caught.value) == "the rewritten code does not parse: syntax error at line 1, column 9: '(' was never closed"


def test_a_corpus_line_of_broken_json_names_its_column_on_that_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"text": "fine"}) + "\n" + '{"text": "cut short\n', encoding="utf-8")
    corpus = JsonlCorpus(path)
    assert corpus.get(0).text == "fine"
    with pytest.raises(CorpusError) as caught:
        corpus.get(1)
    assert str(caught.value) == f"{path}:2: not valid JSON: Unterminated string starting at column 10"
