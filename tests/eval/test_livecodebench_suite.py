"""``spade eval --suite livecodebench``: generated programs run in our sandbox against public
and hidden tests, a time limit per test.

The problems are small ones written here in the benchmark's published format
(``code_generation_lite``: test lists as JSON, the hidden ones compressed); the policy is the
replay backend answering through the same harness a model goes through. Twenty hostile
programs each fail their own sample, and the host and the other samples are unaffected."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import pickle
import zlib
from pathlib import Path

import pytest
from spade_core.app.eval_harness import SYSTEM_PROMPT, evaluate
from spade_core.evaluation import SuiteContext
from spade_designer.llm.replay import ReplayBackend, conversation_key
from spade_eval.benchmarks import BenchmarkDataError
from spade_eval.livecodebench import _tests, extract_program, livecodebench_items, outputs_match

SUM_TESTS = [{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]
SUM_HIDDEN = [{"input": f"{a} {b}\n", "output": f"{a + b}\n", "testtype": "stdin"} for a, b in ((5, 7), (-1, 1), (10**12, 3))]
SUM_SOLUTION = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"


def _compressed(tests: list[dict]) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(tests)))).decode()


def _sum_row(qid: str, date: str = "2025-03-01T00:00:00") -> dict:
    return {"question_id": qid, "question_title": qid, "question_content": f"{qid}: read two integers, print their sum.",
            "platform": "atcoder", "contest_date": date, "starter_code": "", "difficulty": "easy",
            "public_test_cases": json.dumps(SUM_TESTS), "private_test_cases": _compressed(SUM_HIDDEN), "metadata": "{}"}


TWO_SUM_ROW = {
    "question_id": "two_sum", "question_title": "Two Sum", "platform": "leetcode", "contest_date": "2025-04-02T00:00:00",
    "question_content": "Return the indices of the two numbers that add up to target.",
    "starter_code": "class Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n        ",
    "public_test_cases": json.dumps([{"input": "[2,7,11,15]\n9", "output": "[0, 1]", "testtype": "functional"}]),
    "private_test_cases": json.dumps([{"input": "[3,2,4]\n6", "output": "[1, 2]", "testtype": "functional"}]),
    "metadata": json.dumps({"func_name": "twoSum"}), "difficulty": "easy",
}
TWO_SUM_SOLUTION = """```python
from typing import List
class Solution:
    def twoSum(self, nums: List[int], target: int) -> List[int]:
        seen = {}
        for i, x in enumerate(nums):
            if target - x in seen:
                return [seen[target - x], i]
            seen[x] = i
```"""


def _write(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _replies(items, reply_for) -> ReplayBackend:
    recorded = {}
    for item in items:
        obs, _ = item.make_env().reset(seed=item.seed)
        key = conversation_key([{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": obs}])
        recorded[key] = reply_for(item.label)
    return ReplayBackend(recorded=recorded)


def test_published_test_lists_are_read_and_a_pickle_naming_a_class_is_refused() -> None:
    assert _tests(_compressed(SUM_HIDDEN)) == SUM_HIDDEN and _tests(json.dumps(SUM_TESTS)) == SUM_TESTS
    hostile = base64.b64encode(zlib.compress(pickle.dumps(Path("/")))).decode()
    with pytest.raises(BenchmarkDataError, match="refused"):
        _tests(hostile)
    assert extract_program("text\n```python\nprint(1)\n```\nmore ```py\nprint(2)\n```") == "print(2)\n"
    assert extract_program("no code") is None
    assert outputs_match("3 \n", "3\n") and outputs_match("0.3333333", "0.33333333") and not outputs_match("4", "3")


def test_reference_programs_pass_and_wrong_ones_fail_through_the_harness(tmp_path: Path) -> None:
    data = _write(tmp_path / "lcb.jsonl", [_sum_row("sum_a"), _sum_row("old", "2024-05-01T00:00:00"), TWO_SUM_ROW])
    with contextlib.ExitStack() as stack:
        ctx = SuiteContext(None, None, None, stack)
        items = livecodebench_items(ctx, size=2, data=data, release="v6", time_limit=3)
        assert [i.label for i in items] == ["sum_a", "sum_a", "two_sum", "two_sum"]  # v6: from 2025-02-01 on
        right = _replies(items, lambda label: SUM_SOLUTION if label == "sum_a" else TWO_SUM_SOLUTION)
        result = evaluate(right, items, suite="livecodebench", size=2, concurrency=4)
        assert result.columns["LCB-v6"].success_rate == 1.0 and result.overall.errors == 0
        wrong = _replies(items, lambda label: SUM_SOLUTION.replace("a + b", "a - b") if label == "sum_a" else
                         TWO_SUM_SOLUTION.replace("return [seen[target - x], i]", "return [i, i]"))
        result = evaluate(wrong, items, suite="livecodebench", size=2, concurrency=4)
        assert result.columns["LCB-v6"].success_rate == 0.0 and result.overall.errors == 0
        # a program right on the public test only fails on the hidden ones
        env = items[0].make_env()
        obs, reward, _, _, info = env.step("```python\nprint(3)\n```")
        assert (reward, info["passed"], info["tests"]) == (0.0, 1, 4) and obs == "test 2: wrong answer"


def hostile_programs(data_file: str, canary: str) -> dict[str, str]:
    return {
        "infinite_loop": "while True:\n    pass",
        "sleep_forever": "import time\ntime.sleep(10**6)",
        "fork_bomb": "import os\nwhile True:\n    os.fork()",
        "huge_output": "print('x' * 10**8)",
        "endless_printing": "while True:\n    print('y' * 1000)",
        "raw_fd_flood": "import os\nwhile True:\n    os.write(1, b'3\\n' * 100000)",
        "read_the_tests_file": f"print(open({data_file!r}).read())",
        "read_etc_passwd": "print(open('/etc/passwd').read())",
        "write_a_file": f"open({canary!r}, 'w').write('pwned')\nprint(3)",
        "memory_bomb": "x = bytearray(10**10)\nprint(3)",
        "growing_memory": "a = []\nwhile True:\n    a.append(' ' * 10**7)",
        "deep_recursion": "import sys\nsys.setrecursionlimit(10**9)\ndef f(n):\n    return f(n + 1)\nf(0)",
        "kill_the_parent": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nprint(3)",
        "kill_everyone": "import os\nos.kill(-1, 9)\nprint(3)",
        "os_system": "import os\nos.system('echo pwned > /tmp/pwned_by_lcb')\nprint(3)",
        "subprocess": "import subprocess\nprint(subprocess.check_output(['echo', '3']).decode())",
        "socket": "import socket\nsocket.create_connection(('127.0.0.1', 22))\nprint(3)",
        "thread_flood": "import threading, time\nfor _ in range(10000):\n    threading.Thread(target=time.sleep, args=(100,)).start()",
        "exit_early": "import sys\nsys.exit(0)",
        "break_builtins": "import builtins\nbuiltins.print = None\nbuiltins.input = None\nraise KeyboardInterrupt",
    }


@pytest.mark.slow
def test_twenty_hostile_programs_each_fail_their_own_sample_and_nothing_else(tmp_path: Path) -> None:
    canary = tmp_path / "canary.txt"
    canary.write_text("untouched")
    rows = [_sum_row(f"hostile_{name}") for name in hostile_programs("", "")] + [_sum_row("honest_before"), _sum_row("honest_after")]
    data = _write(tmp_path / "lcb.jsonl", rows)
    programs = hostile_programs(data, str(canary))
    assert len(programs) == 20

    def reply(label: str) -> str:
        name = label.removeprefix("hostile_")
        return f"```python\n{programs[name]}\n```" if name in programs else SUM_SOLUTION

    with contextlib.ExitStack() as stack:
        items = livecodebench_items(SuiteContext(None, None, None, stack), data=data, time_limit=2, memory_mb=256)
        result = evaluate(_replies(items, reply), items, suite="livecodebench", size=1, concurrency=6)
    by_label = {e.label: e for e in result.episodes}
    assert len(by_label) == 22 and result.overall.errors == 0
    assert [label for label, e in by_label.items() if e.success] == ["honest_before", "honest_after"], \
        {label: e for label, e in by_label.items() if e.success}
    assert canary.read_text() == "untouched" and not Path("/tmp/pwned_by_lcb").exists()
    assert os.getppid() > 1  # this process and its parent are alive
