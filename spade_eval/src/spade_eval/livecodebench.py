"""LiveCodeBench (code generation) as a suite: ``spade eval --suite livecodebench``.

Rows are read in the benchmark's published format (``code_generation_lite``):
``question_content``, ``starter_code``, ``public_test_cases`` and ``private_test_cases``
(a JSON list of ``{"input", "output", "testtype"}``; the private list may be stored
compressed, base64 of zlib of a pickled JSON string), and ``metadata`` (JSON, with
``func_name`` for LeetCode-style problems). ``-o data=`` names a file or a Hub dataset as for
the AIME suites; ``-o release=v6`` keeps the problems dated after v5's last (LiveCodeBench-v6
adds those of 2025-02-01 to 2025-05-01), ``-o since=``/``until=`` any window by
``contest_date``.

**Each sample runs in our sandbox.** The reply's last Python code block becomes a worker of
its own (a fresh code version per sample, forked from the zygote, behind every OS layer:
seccomp, Landlock, namespaces, rlimits, a memory cgroup), started without the Python guard
because contest programs import ``sys`` and read stdin as any program does. Each test is one
call into it: the test's input only (the expected outputs never leave this process), run
with ``sys.stdin`` on that input and ``sys.stdout`` captured up to ``max_output_chars``, within
the per-test time limit (``-o time_limit=`` seconds, default 6). The sample passes when
every public and hidden test does; the first failure, timeout or crash (the worker killed
with it) fails the sample and ends its tests. Pass@1 is the column LCB-v6.
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import re
import threading
import uuid
import weakref
import zlib
from collections.abc import Sequence
from typing import Any

from spade_core.answers import numbers_match
from spade_core.evaluation import EpisodeSuite, EvalItem, SuiteContext

from .benchmarks import BenchmarkDataError, load_rows, require_fields

#: Standard-library modules contest programs import, imported by the zygote before it
#: forks (a worker cannot read module files from disk).
PROGRAM_MODULES = ("array", "bisect", "collections", "copy", "decimal", "fractions", "functools", "heapq", "io",
                   "itertools", "math", "operator", "queue", "random", "re", "statistics", "string", "threading",
                   "time", "typing")

#: The first contest date of the problems LiveCodeBench-v6 adds to v5.
RELEASE_SINCE = {"v6": "2025-02-01", "v5": "2024-08-01"}

RUNNER = '''
import io
import json
import sys

PROGRAM = {program!r}
LIMIT = {limit!r}


class _Capped(io.StringIO):
    def write(self, text):
        if self.tell() + len(text) > LIMIT:
            raise RuntimeError("output limit exceeded")
        return super().write(text)


class ProgramRunEnv:
    """One call per test: the test's input in, the program's output (or error) out."""

    def reset(self, seed=None):
        return "ready", {{}}

    def step(self, action):
        test = json.loads(action)
        out = _Capped()
        saved = sys.stdout, sys.stdin
        sys.stdout = out
        sys.stdin = io.TextIOWrapper(io.BytesIO(test["input"].encode()), encoding="utf-8")
        result = error = None
        try:
            namespace = {{"__name__": "__main__"}}
            exec(compile(PROGRAM, "<solution>", "exec"), namespace)
            if test["func_name"]:
                method = getattr(namespace["Solution"](), test["func_name"])
                result = json.dumps(method(*[json.loads(a) for a in test["input"].split("\\n") if a.strip()]))
        except SystemExit:
            pass
        except BaseException as exc:
            error = type(exc).__name__ + ": " + str(exc)[:200]
        finally:
            sys.stdout, sys.stdin = saved
        return json.dumps({{"stdout": out.getvalue(), "result": result, "error": error}}), 0.0, True, False, {{}}
'''


#: Largest decoded test list of one problem (its public and hidden tests as JSON text),
#: by default; ``-o max_tests_mb=`` changes it. A problem past it is that problem's error
#: (its samples are left out of the column, named), never the evaluator's memory.
MAX_TESTS_MB = 64
#: Most tests one problem may list.
MAX_TESTS = 10_000
#: Largest input or output of one test.
MAX_TEST_CHARS = 16 * 1024 * 1024


def _inflated_size(packed: bytes, limit: int) -> int | None:
    """How many bytes ``packed`` (zlib) decompresses to, counted a megabyte at a time and
    nothing kept; ``None`` past ``limit``, as soon as it is passed."""
    unpacker = zlib.decompressobj()
    total, chunk = 0, packed
    while chunk:
        total += len(unpacker.decompress(chunk, 1 << 20))
        if total > limit:
            return None
        chunk = unpacker.unconsumed_tail
    total += len(unpacker.flush())
    return None if total > limit else total


class _StringsOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise BenchmarkDataError(f"a test list's pickle names {module}.{name}: refused")


def _tests(value: Any, limit: int = MAX_TESTS_MB << 20) -> list[dict[str, Any]]:
    """A test list as published: a list, a JSON string, or base64(zlib(pickle(JSON)));
    the pickle may hold only a string (no class is ever loaded from it). Decoded within
    ``limit`` bytes: the decompression stops one byte past it, and a list longer than
    :data:`MAX_TESTS`, a test that is no object with text ``input`` and ``output``, or one
    over :data:`MAX_TEST_CHARS` are refused. Raises :class:`BenchmarkDataError` saying why."""
    if isinstance(value, list):
        tests = value
    else:
        text = str(value or "[]").strip()
        if not text.startswith("["):
            try:
                packed = base64.b64decode(text, validate=True)
                size = _inflated_size(packed, limit)
                data = b"" if size is None else zlib.decompress(packed, bufsize=max(size, 1))
            except (ValueError, zlib.error) as exc:
                raise BenchmarkDataError(f"a compressed test list cannot be read: {exc}") from None
            if size is None:
                raise BenchmarkDataError(f"its tests decompress to more than {limit >> 20} MiB "
                                         "(-o max_tests_mb= raises the limit)")
            try:
                text = _StringsOnly(io.BytesIO(data)).load()
            except BenchmarkDataError:
                raise
            except Exception as exc:  # a damaged pickle: any of several types
                raise BenchmarkDataError(f"a compressed test list's pickle cannot be read: {type(exc).__name__}") from None
            del data
            if not isinstance(text, str):
                raise BenchmarkDataError(f"a compressed test list's pickle holds a {type(text).__name__}, not JSON text")
        if len(text) > limit:
            raise BenchmarkDataError(f"its tests are more than {limit >> 20} MiB of JSON (-o max_tests_mb= raises the limit)")
        counted = [0]

        def test(obj: dict[str, Any]) -> dict[str, Any]:
            counted[0] += 1
            if counted[0] > 4 * MAX_TESTS:  # a test is one object (metadata may add a few)
                raise BenchmarkDataError(f"its test list has more than {MAX_TESTS} tests")
            return obj

        try:
            tests = json.loads(text, object_hook=test)
        except json.JSONDecodeError as exc:
            raise BenchmarkDataError(f"a test list is not JSON: {exc.msg} at character {exc.pos}") from None
        except RecursionError:
            raise BenchmarkDataError("a test list is nested too deeply") from None
    if not isinstance(tests, list) or len(tests) > MAX_TESTS:
        raise BenchmarkDataError(f"a test list must be a JSON list of at most {MAX_TESTS} tests")
    for n, t in enumerate(tests):
        if not isinstance(t, dict) or not isinstance(t.get("input"), str) or not isinstance(t.get("output"), str):
            raise BenchmarkDataError(f"test {n + 1} is not an object with text input and output")
        if len(t["input"]) > MAX_TEST_CHARS or len(t["output"]) > MAX_TEST_CHARS:
            raise BenchmarkDataError(f"test {n + 1} has an input or output over {MAX_TEST_CHARS} characters")
    return tests


class ProblemTests:
    """One problem's tests, decoded when a sample first needs them (never when the suite's
    items are listed: a suite holds each problem as published, compressed) and shared by
    the samples in flight: held while one of them is, decoded again after. One problem is
    decoded at a time (a decode peaks at about three times its limit: the decompressed
    pickle, its string, the tests), so the evaluator's memory is bounded by the limit and
    the samples in flight, never by the file's decompressed size."""

    _decoding = threading.Lock()

    def __init__(self, public: Any, private: Any, limit: int) -> None:
        self.public, self.private, self.limit = public, private, limit
        self._held: weakref.ref[list[dict[str, Any]]] | None = None

    def decoded(self) -> list[dict[str, Any]]:
        with self._decoding:
            held = self._held() if self._held is not None else None
            if held is not None:
                return held
            tests = _Tests(_tests(self.public, self.limit) + _tests(self.private, self.limit))
            self._held = weakref.ref(tests)
            return tests


class _Tests(list):  # type: ignore[type-arg]
    """A list that a weak reference can name (a plain list cannot)."""

    __slots__ = ("__weakref__",)


#: A code fence's opening line; possessive, so a run of spaces is read once (two adjacent
#: ``[ \t]*`` shared it every way they could: quadratic in a reply's spaces).
_FENCE_OPEN = re.compile(r"```[ \t]*+(?:python3?|py)?[ \t]*+\n", re.IGNORECASE)


def extract_program(reply: str) -> str | None:
    """The last fenced code block of a reply (```python ... ``` or ``` ... ```), found in
    time linear in the reply: each block ends at the first fence after its opening line, and
    once a block has no closing fence no later one has."""
    blocks: list[str] = []
    at = 0
    while (opening := _FENCE_OPEN.search(reply, at)) is not None:
        close = reply.find("```", opening.end())
        if close == -1:
            break
        blocks.append(reply[opening.end() : close])
        at = close + 3
    return blocks[-1] if blocks else None


def outputs_match(got: str, expected: str) -> bool:
    """Line by line, whitespace-separated tokens equal, or finite numbers within 1e-6
    (:func:`spade_core.answers.numbers_match`: ``nan`` and ``inf`` match no number)."""
    a = [line.split() for line in got.strip().splitlines() if line.strip()]
    b = [line.split() for line in expected.strip().splitlines() if line.strip()]
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x == y:
            continue
        if len(x) != len(y):
            return False
        if not all(s == t or numbers_match(s, t, abs_tol=1e-6) for s, t in zip(x, y, strict=True)):
            return False
    return True


class LiveCodeEnv:
    """One problem: the reply's program, run in the sandbox on every test."""

    def __init__(self, question: str, tests: list[dict[str, Any]], func_name: str, pool: Any,
                 max_output_chars: int) -> None:
        self.question, self.tests, self.func_name, self.pool = question, tests, func_name, pool
        self.max_output_chars = max_output_chars

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        return self.question, {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        program = extract_program(action)
        if program is None:
            return "No ```python code block in the reply.", 0.0, True, False, {"passed": 0, "tests": len(self.tests)}
        passed, verdict = self.run(program)
        ok = passed == len(self.tests)
        return verdict, float(ok), True, False, {"passed": passed, "tests": len(self.tests)}

    def run(self, program: str) -> tuple[int, str]:
        """Tests passed before the first failure, and what happened."""
        source = RUNNER.format(program=program, limit=self.max_output_chars) + f"\n# sample {uuid.uuid4().hex}\n"
        try:
            handle = self.pool.spawn(source, class_name="ProgramRunEnv", allowed_modules=PROGRAM_MODULES)
        except Exception as exc:
            return 0, f"the program could not start: {type(exc).__name__}"
        passed = 0
        try:
            for n, test in enumerate(self.tests):
                request = json.dumps({"input": test["input"], "func_name": self.func_name if test.get("testtype") ==
                                      "functional" else ""})
                try:
                    self.pool.reset(handle, seed=0)
                    reply = json.loads(self.pool.step(handle, request)[0])
                except Exception as exc:  # timeout, memory, a crash: the worker is gone with it
                    return passed, f"test {n + 1}: {type(exc).__name__}"
                if reply["error"]:
                    return passed, f"test {n + 1}: {reply['error']}"
                got = reply["result"] if self.func_name and test.get("testtype") == "functional" else reply["stdout"]
                expected = test["output"]
                same = (json.loads(got) == json.loads(expected)) if got is not None and test.get("testtype") == \
                    "functional" else outputs_match(got or "", expected)
                if not same:
                    return passed, f"test {n + 1}: wrong answer"
                passed += 1
        finally:
            try:
                self.pool.close_env(handle)
            except Exception:  # already lost with its worker
                pass
        return passed, "all tests passed"

    def close(self) -> None:
        pass


def _problem_env(question: str, tests: ProblemTests, func_name: str, pool: Any, max_output_chars: int,
                 label: str) -> LiveCodeEnv:
    try:
        decoded = tests.decoded()
    except BenchmarkDataError as exc:
        raise BenchmarkDataError(f"LiveCodeBench problem {label}: {exc}") from None
    return LiveCodeEnv(question, decoded, func_name, pool, max_output_chars)


def _prompt(row: dict[str, Any]) -> str:
    starter = str(row.get("starter_code") or "").strip()
    how = (f"Complete this code and return it whole:\n```python\n{starter}\n```" if starter else
           "Read the input from standard input and write the answer to standard output.")
    return f"{str(row['question_content']).strip()}\n\n{how}\n\nGive your program in one ```python code block."


def livecodebench_items(context: SuiteContext, *, size: int = 1, seed: int = 0, data: str | None = None,
                        split: str = "test", config: str | None = None, release: str | None = None,
                        since: str | None = None, until: str | None = None, limit: int | None = None,
                        time_limit: float = 6.0, memory_mb: int = 512,
                        max_tests_mb: int = MAX_TESTS_MB) -> Sequence[EvalItem]:
    """``size`` samples of each problem; their programs share one sandbox pool, closed with
    the evaluation (``context.resources``). A problem's tests are decoded when its samples
    play (:class:`ProblemTests`); one whose tests cannot be decoded within ``max_tests_mb``
    fails its samples with the reason, and the others are evaluated."""
    if not 1 <= int(max_tests_mb) <= 4096:
        raise BenchmarkDataError(f"max_tests_mb must be from 1 to 4096, got {max_tests_mb!r}")
    from spade_sandbox.launcher import SandboxLauncher

    source = data or "livecodebench/code_generation_lite"
    rows = load_rows(source, split=split, config=config)
    require_fields(rows, ("question_content", "public_test_cases"), source)
    if release:
        if release not in RELEASE_SINCE:
            raise BenchmarkDataError(f"release {release!r}: one of {', '.join(RELEASE_SINCE)}")
        since = since or RELEASE_SINCE[release]
    rows = [r for r in rows if (not since or str(r.get("contest_date", ""))[:10] >= since)
            and (not until or str(r.get("contest_date", ""))[:10] < until)]
    launcher = SandboxLauncher.from_config(context.config) if context.config is not None else SandboxLauncher.active()
    pool = launcher.program_pool(call_timeout_s=float(time_limit), cpu_seconds=max(1, int(time_limit) + 1),
                                 memory_mb=int(memory_mb), max_idle_workers=0)
    max_output_chars = pool.limits.max_output_chars
    if context.resources is not None:
        context.resources.callback(pool.close)
    out = []
    for n, row in enumerate(rows[:limit] if limit else rows):
        label = str(row.get("question_id", n))
        tests = ProblemTests(row["public_test_cases"], row.get("private_test_cases"), int(max_tests_mb) << 20)
        meta = row.get("metadata") or {}
        try:
            func_name = str((json.loads(meta) if isinstance(meta, str) else meta).get("func_name", "") or "")
        except (ValueError, AttributeError, RecursionError):
            func_name = ""  # metadata that is no JSON object: a stdin problem
        question = _prompt(row)
        out += [EvalItem(group=f"LCB-v6/{label}", seed=seed + k, label=label, max_turns=1, column="LCB-v6",
                         make_env=lambda q=question, t=tests, f=func_name, lab=label: _problem_env(
                             q, t, f, pool, max_output_chars, lab))
                for k in range(size)]
    return out


SUITE = EpisodeSuite(
    name="livecodebench",
    description="LiveCodeBench code generation (release=v6: problems from 2025-02-01), Pass@1: each sample's "
                "program runs in the sandbox against the public and hidden tests, a time limit per test.",
    items=livecodebench_items,
    trusted=False,
    options={"data": "a .jsonl/.json/.parquet file or a Hub dataset id (offline with HF_HUB_OFFLINE=1)",
             "split": "the Hub dataset's split (default test)", "config": "the Hub dataset's configuration",
             "release": "v5 or v6: the problems that release adds", "since": "first contest date (YYYY-MM-DD)",
             "until": "contest dates before this one", "limit": "only the first N problems",
             "time_limit": "seconds per test (default 6)", "memory_mb": "memory per program (default 512)",
             "max_tests_mb": f"largest decoded test list of one problem (default {MAX_TESTS_MB})"},
    defaults={"size": 1, "temperature": 0.6, "max_new_tokens": 8192},
)
