"""Held-out benchmarks of the paper's Table 1 as suites: ``aime25``, ``aime26`` (Avg@k,
answers compared with ``math-verify``) and ``gpqa_diamond`` (multiple choice, options
shuffled per sample).

Data comes from ``-o data=``: a local ``.jsonl`` / ``.json`` / ``.parquet`` file, or a Hub
dataset id read with ``datasets.load_dataset`` (offline from the local cache when
``HF_HUB_OFFLINE=1``; ``-o split=`` and ``-o config=`` pick the split and configuration).
Rows are read in each source's published format: AIME rows hold ``problem`` and
``answer``; GPQA rows hold ``Question``, ``Correct Answer`` and ``Incorrect Answer 1..3``.

Every sample is one single-turn episode. ``--size k`` samples of each problem make the
problem's group; the suite's column (``AIME25``, ...) is the mean over problems of the
share of their samples answered correctly, which is Avg@k, reported with a 95% interval
over problems.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spade_core.actions import find_boxed
from spade_core.errors import SpadeError
from spade_core.evaluation import EpisodeSuite, EvalItem, SuiteContext

LETTERS = "ABCD"


class BenchmarkDataError(SpadeError, ValueError):
    """A benchmark's data that cannot be read, or rows without the source's fields."""


def load_rows(data: str, *, split: str = "train", config: str | None = None) -> list[dict[str, Any]]:
    """The rows of a local JSONL/JSON/Parquet file, or of ``split`` of a dataset
    ``datasets.load_dataset`` reads: a Hub id (from the cache when offline) or a folder
    laid out as a Hub dataset repository."""
    path = Path(data)
    if path.is_file():
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            return pq.read_table(path).to_pylist()
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            rows = json.loads(text)
            return list(rows if isinstance(rows, list) else rows.get("rows", []))
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    if path.suffix in (".jsonl", ".json", ".parquet") and not path.exists():
        raise BenchmarkDataError(f"{data} does not exist")
    try:
        import datasets
    except ImportError as exc:
        raise BenchmarkDataError(f"{data!r} is not a file, and reading a Hub dataset needs `datasets`") from exc
    try:
        return list(datasets.load_dataset(data, config, split=split))
    except Exception as exc:
        raise BenchmarkDataError(f"cannot read the Hub dataset {data!r} (split {split!r}): {exc}; "
                                 "without network, set HF_HUB_OFFLINE=1 with it in the local cache, "
                                 "or pass -o data=FILE.jsonl") from exc


def require_fields(rows: list[dict[str, Any]], fields: Sequence[str], data: str) -> None:
    if not rows:
        raise BenchmarkDataError(f"{data} holds no rows")
    missing = [f for f in fields if f not in rows[0]]
    if missing:
        raise BenchmarkDataError(f"{data}: rows lack {', '.join(missing)} (they have {', '.join(rows[0])})")


def answers_match(gold: str, reply: str) -> bool:
    """Whether ``reply``'s final answer equals ``gold`` by ``math-verify`` (its parser
    reads the last boxed or plain answer; no signal timeouts, as episodes are stepped on
    threads)."""
    from math_verify import parse, verify

    boxed = find_boxed(reply)
    target = f"${boxed[-1]}$" if boxed else reply
    gold_parsed = parse(f"${gold}$", parsing_timeout=None)
    pred = parse(target, parsing_timeout=None)
    return bool(gold_parsed and pred and verify(gold_parsed, pred, timeout_seconds=None))


class AnswerEnv:
    """One question, one reply, scored by ``check(gold, reply)``."""

    def __init__(self, question: str, gold: str, check: Any, label: str) -> None:
        self.question, self.gold, self.check, self.label = question, gold, check, label

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        return self.question, {"problem": self.label}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        try:
            right = self.check(self.gold, action)
        except Exception:  # an unparsable reply is a wrong one
            right = False
        return ("Correct." if right else "Wrong."), float(right), True, False, {"problem": self.label}

    def close(self) -> None:
        pass


def aime_items(column: str, default_data: str | None):
    def items(context: SuiteContext, *, size: int = 32, seed: int = 0, data: str | None = None,
              split: str = "train", config: str | None = None, limit: int | None = None) -> Sequence[EvalItem]:
        del context
        source = data or default_data
        if not source:
            raise BenchmarkDataError(f"{column}: name the data with -o data=FILE or a Hub dataset id")
        rows = load_rows(source, split=split, config=config)
        require_fields(rows, ("problem", "answer"), source)
        out = []
        for n, row in enumerate(rows[:limit] if limit else rows):
            label = str(row.get("id", n))
            question = f"{row['problem']}\n\nPut your final answer within \\boxed{{}}."
            out += [EvalItem(group=f"{column}/{label}", seed=seed + k, label=label, max_turns=1, column=column,
                             make_env=lambda q=question, a=str(row["answer"]), lab=label: AnswerEnv(q, a, answers_match, lab))
                    for k in range(size)]
        return out

    return items


def gpqa_choices(row: dict[str, Any], seed: int | str) -> tuple[list[str], str]:
    """The four options of ``row`` in the order a generator seeded with ``seed`` shuffles
    them, and the letter of the correct one."""
    options = [row["Correct Answer"], row["Incorrect Answer 1"], row["Incorrect Answer 2"], row["Incorrect Answer 3"]]
    order = list(range(4))
    random.Random(seed).shuffle(order)
    return [str(options[i]).strip() for i in order], LETTERS[order.index(0)]


_ANSWER_LINE = re.compile(r"answer\s*(?:is)?\s*[:=]?\s*\(?([ABCD])\)?\b", re.IGNORECASE)
_LONE_LETTER = re.compile(r"(?<![A-Za-z])\(?([ABCD])\)?(?![A-Za-z])")


def extract_choice(reply: str) -> str | None:
    """The letter a reply chooses: the last ``\\boxed{X}``, else the last "Answer: X",
    else the last standing letter A-D."""
    for payload in reversed(find_boxed(reply)):
        m = re.fullmatch(r"\s*(?:\\text\{)?\(?([ABCD])\)?\}?\s*", payload)
        if m:
            return m.group(1)
    found = _ANSWER_LINE.findall(reply)
    if found:
        return found[-1].upper()
    found = _LONE_LETTER.findall(reply)
    return found[-1] if found else None


def gpqa_items(context: SuiteContext, *, size: int = 1, seed: int = 0, data: str | None = None,
               split: str = "train", config: str | None = "gpqa_diamond", limit: int | None = None) -> Sequence[EvalItem]:
    """``size`` samples of each question; sample ``k`` of question ``n`` shows its options
    in the order seeded by ``(seed, n, k)``."""
    del context
    source = data or "Idavidrein/gpqa"
    rows = load_rows(source, split=split, config=None if data and Path(data).is_file() else config)
    require_fields(rows, ("Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3"),
             source)
    out = []
    for n, row in enumerate(rows[:limit] if limit else rows):
        label = str(row.get("Record ID", n))
        for k in range(size):
            options, letter = gpqa_choices(row, f"{seed}/{n}/{k}")
            question = (f"{str(row['Question']).strip()}\n\n" + "\n".join(f"{L}) {o}" for L, o in zip(LETTERS, options, strict=True))
                        + "\n\nAnswer with the letter of the correct option as \\boxed{X}.")
            out.append(EvalItem(group=f"GPQA-D/{label}", seed=seed + k, label=label, max_turns=1, column="GPQA-D",
                                make_env=lambda q=question, a=letter, lab=label: AnswerEnv(
                                    q, a, lambda gold, reply: extract_choice(reply) == gold, lab)))
    return out


_DATA_OPTIONS = {"data": "a .jsonl/.json/.parquet file or a Hub dataset id (offline with HF_HUB_OFFLINE=1)",
                 "split": "the Hub dataset's split (default train)", "config": "the Hub dataset's configuration",
                 "limit": "only the first N problems"}

AIME25_SUITE = EpisodeSuite(
    name="aime25", description="AIME 2025 (30 problems), Avg@k over --size samples per problem, answers compared "
                               "with math-verify; data from -o data= (default the Hub's math-ai/aime25).",
    items=aime_items("AIME25", "math-ai/aime25"), options=_DATA_OPTIONS,
    defaults={"size": 32, "temperature": 0.6, "max_new_tokens": 8192})
AIME26_SUITE = EpisodeSuite(
    name="aime26", description="AIME 2026, Avg@k over --size samples per problem, answers compared with math-verify; "
                               "data from -o data= (a file or Hub id: no default).",
    items=aime_items("AIME26", None), options=_DATA_OPTIONS,
    defaults={"size": 32, "temperature": 0.6, "max_new_tokens": 8192})
GPQA_SUITE = EpisodeSuite(
    name="gpqa_diamond", description="GPQA-Diamond (198 questions), multiple choice with the options shuffled per "
                                     "sample, accuracy; data from -o data= (default the Hub's Idavidrein/gpqa, "
                                     "gpqa_diamond, which is gated).",
    items=gpqa_items, options=_DATA_OPTIONS, defaults={"size": 1, "temperature": 0.6, "max_new_tokens": 8192})
