"""``spade eval --suite aime25 / aime26 / gpqa_diamond``: the paper's held-out benchmarks.

The datasets are small ones written here in each source's published format (AIME rows with
``problem`` and ``answer``; GPQA rows with ``Question``, ``Correct Answer`` and ``Incorrect
Answer 1..3``), read from JSONL, Parquet and a folder laid out as a Hub dataset; the
policies are the replay backend answering through the same harness a model goes through."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

pytest.importorskip("math_verify")

from spade_core.evaluation import SuiteContext
from spade_core.plugins import get_plugins
from spade_designer.llm.base import ChatBackend, Completion
from spade_designer.llm.replay import ReplayBackend
from spade_eval.benchmarks import (
    BenchmarkDataError,
    aime_items,
    answer_checker,
    extract_choice,
    gpqa_choices,
    gpqa_items,
    load_rows,
)
from spade_eval.harness import evaluate

CTX = SuiteContext(None, None)


class OptionPicker(ChatBackend):
    """A scripted policy that reads the options a question shows and boxes the letter of
    the first one ``pick`` accepts."""

    name = "option-picker"

    def __init__(self, pick) -> None:
        self.pick = pick

    def generate(self, conversations, sampling):
        out = []
        for conv in conversations:
            shown = [line for line in conv[-1]["content"].splitlines() if line[:3] in ("A) ", "B) ", "C) ", "D) ")]
            letter = next(line[0] for line in shown if self.pick(line[3:]))
            out.append(Completion(text=f"\\boxed{{{letter}}}", prompt_tokens=0, completion_tokens=1))
        return out
AIME_ROWS = [
    {"id": "p1", "problem": "Find the remainder when 7^2 + 21 is divided by 1000.", "answer": "70"},
    {"id": "p2", "problem": "How many positive divisors does 588 have, times 28?", "answer": "504"},
    {"id": "p3", "problem": "Let x = 1/2 + 1/3 + 1/6. Find 100x.", "answer": "100"},
]
GPQA_ROWS = [
    {"Record ID": f"r{n}", "Question": f"Which particle mediates interaction {n}?", "Correct Answer": f"right {n}",
     "Incorrect Answer 1": f"wrong {n}a", "Incorrect Answer 2": f"wrong {n}b", "Incorrect Answer 3": f"wrong {n}c"}
    for n in range(4)
]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_the_suites_are_registered_with_the_papers_settings() -> None:
    suites = get_plugins().eval_suites()
    assert {"aime25", "aime26", "gpqa_diamond"} <= set(suites)
    assert suites["aime25"].defaults["size"] == 32 and suites["aime25"].defaults["temperature"] == 0.6
    assert set(suites["gpqa_diamond"].options) == {"data", "split", "config", "limit"}


def test_rows_are_read_from_jsonl_parquet_and_a_hub_layout_folder(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    assert load_rows(str(_jsonl(tmp_path / "a.jsonl", AIME_ROWS))) == AIME_ROWS
    pq.write_table(pa.Table.from_pylist(AIME_ROWS), tmp_path / "a.parquet")
    assert load_rows(str(tmp_path / "a.parquet")) == AIME_ROWS
    repo = tmp_path / "hub_repo"
    (repo / "data").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(GPQA_ROWS), repo / "data" / "train-00000-of-00001.parquet")
    assert load_rows(str(repo), split="train") == GPQA_ROWS
    with pytest.raises(BenchmarkDataError, match="does not exist"):
        load_rows(str(tmp_path / "missing.jsonl"))
    bad = _jsonl(tmp_path / "bad.jsonl", [{"question": "q", "solution": "s"}])
    with pytest.raises(BenchmarkDataError, match="rows lack problem, answer"):
        aime_items("AIME25", None)(CTX, data=str(bad))
    with pytest.raises(BenchmarkDataError, match="name the data"):
        aime_items("AIME26", None)(CTX)


def test_answers_are_compared_by_math_verify_in_the_sandbox() -> None:
    with contextlib.ExitStack() as stack:
        answers_match = answer_checker(SuiteContext(None, None, None, stack))
        assert answers_match("70", "so the remainder is \\boxed{70}.")
        assert answers_match("70", "\\boxed{070}") and answers_match("\\frac{1}{2}", "\\boxed{0.5}")
        assert not answers_match("70", "\\boxed{71}") and not answers_match("70", "")


def test_aime_avg_at_k_is_the_mean_over_problems_with_an_interval(tmp_path: Path) -> None:
    data = str(_jsonl(tmp_path / "aime.jsonl", AIME_ROWS))
    items = aime_items("AIME25", None)(CTX, size=4, data=data)
    assert [i.label for i in items] == ["p1"] * 4 + ["p2"] * 4 + ["p3"] * 4
    # p1 right every time, p2 right 3 of 4 samples, p3 never
    policy = ReplayBackend(rules=[("7\\^2", "\\boxed{70}"), ("588", ["\\boxed{504}", "\\boxed{5}", "\\boxed{504}"]),
                                  ("1/6", "\\boxed{99}")])
    result = evaluate(policy, items, suite="aime25", size=4, concurrency=1)
    column = result.columns["AIME25"]
    assert column.success_rate == pytest.approx((1 + 0.75 + 0) / 3)
    assert (column.tasks, column.episodes) == (3, 12)
    lo, hi = column.interval
    assert 0.0 == lo < column.success_rate < hi <= 1.0

    right = ReplayBackend(rules=[(r["problem"].split()[2], f"\\boxed{{{r['answer']}}}") for r in AIME_ROWS])
    assert evaluate(right, items, size=4).columns["AIME25"].success_rate == 1.0
    wrong = ReplayBackend(rules=[(".", "\\boxed{12345}")])
    assert evaluate(wrong, items, size=4).columns["AIME25"].success_rate == 0.0


def test_gpqa_shuffles_each_sample_by_its_seed_and_extracts_the_choice(tmp_path: Path) -> None:
    options, letter = gpqa_choices(GPQA_ROWS[0], "0/0/0")
    assert sorted(options) == sorted(["right 0", "wrong 0a", "wrong 0b", "wrong 0c"]) and options["ABCD".index(letter)] == "right 0"
    assert gpqa_choices(GPQA_ROWS[0], "0/0/0") == (options, letter)
    letters = {gpqa_choices(GPQA_ROWS[0], f"0/0/{k}")[1] for k in range(40)}
    assert letters == set("ABCD")  # the correct option is not always in one place
    assert extract_choice("thinking... \\boxed{C}") == "C" and extract_choice("The answer is (B).") == "B"
    assert extract_choice("no letter here") is None

    data = str(_jsonl(tmp_path / "gpqa.jsonl", GPQA_ROWS))
    items = gpqa_items(CTX, size=3, data=data)
    assert len(items) == 12 and {i.column for i in items} == {"GPQA-D"}

    for pick, expected in ((lambda o: o.startswith("right"), 1.0), (lambda o: o.endswith("a"), 0.0)):
        result = evaluate(OptionPicker(pick), items, suite="gpqa_diamond", size=3)
        assert result.columns["GPQA-D"].success_rate == expected and result.overall.errors == 0
