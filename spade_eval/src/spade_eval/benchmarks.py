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
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spade_core.actions import find_boxed
from spade_core.answers import names_non_finite
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
        try:
            if path.suffix == ".parquet":
                return _parquet_rows(path)
            if path.suffix == ".json":
                rows = json.loads(path.read_text(encoding="utf-8"))
                return list(rows if isinstance(rows, list) else rows.get("rows", []))
            with path.open(encoding="utf-8") as lines:  # line by line: the file is never held whole
                return [json.loads(line) for line in lines if line.strip()]
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, AttributeError) as exc:
            raise BenchmarkDataError(f"{data}: not readable {path.suffix[1:].upper()} rows: {exc}") from None
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


#: Largest row of a benchmark's Parquet file once converted (a LiveCodeBench problem holds
#: its hidden tests compressed: several megabytes).
MAX_BENCHMARK_ROW_BYTES = 256 * 1024 * 1024


def _parquet_rows(path: Path) -> list[dict[str, Any]]:
    """A Parquet file's rows, read as ``spade import`` reads one
    (:func:`spade_core.app.dataset_files.iter_parquet_rows`): a few rows at a time, each
    batch's cost as Python objects checked against a budget of 64 times the file's size
    before it is converted, so a small file cannot expand to gigabytes."""
    from spade_core.app.dataset_files import DecodeBudget, ImportSourceError, iter_parquet_rows, open_parquet

    try:
        pf = open_parquet(path, path.name)
        rows = []
        for index, row, problem in iter_parquet_rows(pf, path.name, DecodeBudget.for_files([path]),
                                                     row_limit=MAX_BENCHMARK_ROW_BYTES):
            if row is None:
                raise BenchmarkDataError(f"{path}: row {index}: {problem}")
            rows.append(row)
        return rows
    except ImportSourceError as exc:
        raise BenchmarkDataError(str(exc)) from None


def require_fields(rows: list[dict[str, Any]], fields: Sequence[str], data: str) -> None:
    if not rows:
        raise BenchmarkDataError(f"{data} holds no rows")
    missing = [f for f in fields if f not in rows[0]]
    if missing:
        raise BenchmarkDataError(f"{data}: rows lack {', '.join(missing)} (they have {', '.join(rows[0])})")


#: Longest text an answer checker reads: a boxed answer, or the tail of a reply without
#: one (an AIME answer is a number below 1,000; a GPQA answer a letter).
MAX_CHECKED_CHARS = 20_000
#: Wall-clock seconds one math-verify comparison may take in its sandbox worker.
CHECK_TIMEOUT_S = 10.0

CHECKER_SOURCE = '''
"""One answer compared with its gold by math-verify (the sandbox's facade)."""
import json
from math_verify import parse, verify


class AnswerCheckEnv:
    def reset(self, seed=None):
        return "ready", {}

    def step(self, action):
        job = json.loads(action)
        gold = parse(job["gold"])
        pred = parse(job["target"])
        right = bool(gold) and bool(pred) and verify(gold, pred)
        return "right" if right else "wrong", 0.0, True, False, {}
'''


class AnswerCheckError(SpadeError):
    """An answer its checker could not decide (it ran out of time or memory, or failed):
    the episode scores 0 with this message as its ``scoring_error``."""


def checked_text(reply: str) -> str:
    """What of ``reply`` is compared: its last ``\\boxed{...}`` as LaTeX, else the reply
    itself; at most the last :data:`MAX_CHECKED_CHARS` characters either way."""
    boxed = find_boxed(reply)
    target = f"${boxed[-1]}$" if boxed else reply
    return target[-MAX_CHECKED_CHARS:]


class MathAnswerCheck:
    """``check(gold, reply)``: whether ``reply``'s final answer equals ``gold`` by
    ``math-verify``, decided in a sandbox worker of ``pool`` of its own (math-verify turns
    text into sympy expressions, whose cost the text decides: ``\\boxed{9^{9^{9}}}`` never
    ends): the pool's call deadline and memory limit bound it, and a worker that passes
    them is killed with nothing else in it. :class:`AnswerCheckError` when it gives no
    verdict."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    def __call__(self, gold: str, reply: str) -> bool:
        target = checked_text(reply)
        boxed = find_boxed(reply)
        if boxed and names_non_finite(boxed[-1]):
            return False
        from spade_sandbox.errors import SandboxError

        job = json.dumps({"gold": f"${gold}$", "target": target})
        try:  # a worker of its own (isolation): a check that is killed takes no other with it
            handle = self.pool.spawn(CHECKER_SOURCE, allowed_modules=("math_verify",), isolation=uuid.uuid4().hex)
        except SandboxError as exc:
            raise AnswerCheckError(f"the answer checker could not start: {type(exc).__name__}: {exc}") from None
        try:
            self.pool.reset(handle, seed=0)
            verdict = self.pool.step(handle, job)[0]
        except SandboxError as exc:
            raise AnswerCheckError(f"math-verify gave no verdict on the answer: {type(exc).__name__}: {exc}") from None
        finally:
            try:
                self.pool.close_env(handle)
            except SandboxError:  # already lost with its worker
                pass
        return verdict == "right"


def answer_checker(context: SuiteContext) -> MathAnswerCheck:
    """A :class:`MathAnswerCheck` on a pool of the context's sandbox settings, closed with
    the evaluation (``context.resources``)."""
    from spade_sandbox.launcher import SandboxLauncher

    launcher = SandboxLauncher.from_config(context.config) if context.config is not None else SandboxLauncher.active()
    pool = launcher.pool(call_timeout_s=CHECK_TIMEOUT_S, max_idle_workers=0)
    if context.resources is not None:
        context.resources.callback(pool.close)
    return MathAnswerCheck(pool)


class AnswerEnv:
    """One question, one reply, scored by ``check(gold, reply)``; a check that raises
    :class:`AnswerCheckError` scores 0 with its message in ``info["scoring_error"]``."""

    def __init__(self, question: str, gold: str, check: Any, label: str) -> None:
        self.question, self.gold, self.check, self.label = question, gold, check, label

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        return self.question, {"problem": self.label}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        info: dict[str, Any] = {"problem": self.label}
        try:
            right = bool(self.check(self.gold, action))
        except AnswerCheckError as exc:
            right = False
            info["scoring_error"] = str(exc)
        return ("Correct." if right else "Wrong."), float(right), True, False, info

    def close(self) -> None:
        pass


def aime_items(column: str, default_data: str | None):
    def items(context: SuiteContext, *, size: int = 32, seed: int = 0, data: str | None = None,
              split: str = "train", config: str | None = None, limit: int | None = None) -> Sequence[EvalItem]:
        source = data or default_data
        if not source:
            raise BenchmarkDataError(f"{column}: name the data with -o data=FILE or a Hub dataset id")
        rows = load_rows(source, split=split, config=config)
        require_fields(rows, ("problem", "answer"), source)
        check = answer_checker(context)
        out = []
        for n, row in enumerate(rows[:limit] if limit else rows):
            label = str(row.get("id", n))
            question = f"{row['problem']}\n\nPut your final answer within \\boxed{{}}."
            out += [EvalItem(group=f"{column}/{label}", seed=seed + k, label=label, max_turns=1, column=column,
                             make_env=lambda q=question, a=str(row["answer"]), lab=label: AnswerEnv(q, a, check, lab))
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


# Linear-time patterns (possessive quantifiers: whitespace once taken is never given back to
# the next quantifier, so "answer" and 2,000 spaces is one pass, not a cubic search).
_ANSWER_LINE = re.compile(r"answer\s*+(?:is\s*+)?[:=]?\s*+\(?([ABCD])\)?\b", re.IGNORECASE)
_LONE_LETTER = re.compile(r"(?<![A-Za-z])\(?([ABCD])\)?(?![A-Za-z])")
_BOXED_LETTER = re.compile(r"\s*+(?:\\text\{)?\(?([ABCD])\)?\}?\s*+")


def extract_choice(reply: str) -> str | None:
    """The letter a reply chooses: the last ``\\boxed{X}``, else the last "Answer: X",
    else the last standing letter A-D; read from the last :data:`MAX_CHECKED_CHARS`
    characters, in time linear in them."""
    reply = reply[-MAX_CHECKED_CHARS:]
    for payload in reversed(find_boxed(reply)):
        m = _BOXED_LETTER.fullmatch(payload)
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
