"""No reply can stall the evaluator: every answer checker is bounded in time and memory.

* AIME's math-verify comparison ran in the evaluating process with its timeouts off, so
  ``\\boxed{9^{9^{9}}}`` (sympy computing 9 to the 387,420,489th) hung ``spade eval``. It runs
  in a sandbox worker of its own now; the episode scores 0 and says why.
* GPQA's "Answer: X" pattern backtracked cubically on whitespace (2,000 spaces after
  "answer": about a minute); LiveCodeBench's code-fence pattern quadratically on spaces;
  the tool-call tag pattern every tool-use scorer reads replies with, quadratically on
  unclosed tags; tau2's judge-reply fence quadratically on newlines. Each is linear now,
  and the answer-letter reader sees a bounded tail of the reply.

Each attack runs in a child process with a time limit, so a checker that still hangs fails
the test instead of hanging the suite."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from spade_eval.benchmarks import extract_choice

ROOT = Path(__file__).resolve().parents[3]


def run_within(seconds: float, code: str) -> dict:
    """``code`` (which prints one JSON line last) run in a fresh interpreter; fails the test
    when it takes longer than ``seconds``."""
    start = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                              timeout=seconds, cwd=ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {seconds} s")
    assert done.returncode == 0, done.stderr[-3000:]
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "wall_s": time.monotonic() - start}


def test_an_aime_answer_that_never_finishes_verifying_scores_zero_with_its_reason(tmp_path: Path) -> None:
    pytest.importorskip("math_verify")
    data = tmp_path / "aime.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": "tower", "problem": "What is 9 to the 9 to the 9, mod 1000?", "answer": "289"},
        {"id": "easy", "problem": "What is 7 times 10?", "answer": "70"},
    ]))
    result = run_within(120, f"""
        import contextlib, json
        from spade_core.evaluation import SuiteContext
        from spade_designer.llm.replay import ReplayBackend
        from spade_eval.benchmarks import aime_items
        from spade_eval.harness import evaluate

        with contextlib.ExitStack() as stack:
            items = aime_items("AIME25", None)(SuiteContext(None, None, None, stack), size=1, data={str(data)!r})
            policy = ReplayBackend(rules=[("9 to the 9", "\\\\boxed{{9^{{9^{{9}}}}}}"), ("7 times", "\\\\boxed{{70}}")])
            result = evaluate(policy, items, suite="aime25", size=1)
        print(json.dumps({{e.label: [e.episode_return, e.error, e.scoring_error] for e in result.episodes}}))
    """)
    (tower_return, tower_error, why), (easy_return, _, easy_why) = result["tower"], result["easy"]
    assert (tower_return, tower_error) == (0.0, None) and "math-verify gave no verdict" in why, result
    assert (easy_return, easy_why) == (1.0, None), result


ADVERSARIAL = {
    # GPQA's answer line: "answer" then whitespace that three \s* shared every way
    "gpqa_answer_spaces": ("extract_choice", "'answer' + ' ' * 2000"),
    "gpqa_answer_many": ("extract_choice", "('answer ' + ' ' * 300) * 60"),
    # LiveCodeBench's fence: ``` then spaces with no newline
    "lcb_fence_spaces": ("extract_program", "'```' + ' ' * 60000 + 'x'"),
    # the tool-call tags of every tool-use scorer: unclosed openings
    "tool_call_unclosed": ("parse_tool_action", "'<tool_call>' * 40000"),
    # tau2's judge reply: a fence, then newlines with no closing fence
    "judge_fence_newlines": ("read_verdicts", "'```' + '\\n' * 40000 + 'x```y'"),
}
IMPORTS = {"extract_choice": "spade_eval.benchmarks", "extract_program": "spade_eval.livecodebench",
           "parse_tool_action": "spade_core.actions", "read_verdicts": "spade_eval.tau2.judge"}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_an_adversarial_reply_is_read_in_linear_time(name: str) -> None:
    function, text = ADVERSARIAL[name]
    result = run_within(20, f"""
        import json, time
        from {IMPORTS[function]} import {function}
        text = {text}
        start = time.perf_counter()
        try:
            {function}(*([text, []] if {function!r} == "read_verdicts" else [text]))
        except ValueError:  # unreadable is an answer too; only the time counts
            pass
        print(json.dumps({{"seconds": time.perf_counter() - start, "chars": len(text)}}))
    """)
    assert result["seconds"] < 0.5, result


_OLD_ANSWER_LINE = re.compile(r"answer\s*(?:is)?\s*[:=]?\s*\(?([ABCD])\)?\b", re.IGNORECASE)
_OLD_LONE_LETTER = re.compile(r"(?<![A-Za-z])\(?([ABCD])\)?(?![A-Za-z])")
_PIECES = st.sampled_from(["answer", "Answer", " ", "  ", "\n", "is", ":", "=", "(", ")", "A", "b", "C", "D", "E",
                           "x", "\\boxed{", "}", "\\text{", "the"])


def _old_letter(reply: str) -> str | None:
    found = _OLD_ANSWER_LINE.findall(reply)
    if found:
        return found[-1].upper()
    found = _OLD_LONE_LETTER.findall(reply)
    return found[-1] if found else None


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=40).map("".join))
def test_the_linear_answer_reader_reads_what_the_old_patterns_read(reply: str) -> None:
    """The same letters as the backtracking patterns gave, for any reply without a box."""
    if "\\boxed{" not in reply:
        assert extract_choice(reply) == _old_letter(reply)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["<tool_call>", "</tool_call>", "a", "<", ">", "\n", "<tool_", "call>"]),
                max_size=40).map("".join))
def test_tags_are_found_as_the_lazy_pattern_found_them(text: str) -> None:
    from spade_core.actions import tagged

    assert tagged(text, "tool_call") == re.findall(r"<tool_call>(.*?)</tool_call>", text, re.DOTALL)
