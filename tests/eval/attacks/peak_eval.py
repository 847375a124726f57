"""Evaluate the ``livecodebench`` suite on a data file in this fresh process and print, as
JSON, each episode's outcome and how far the process's peak memory (``VmHWM``) rose above
where it stood before. A warm-up evaluation of a small good file runs first (libraries
imported, the sandbox's zygote started), so what is measured is what the data costs. The
policy answers every problem with a program that prints the sum of two integers.

Usage: ``python peak_eval.py WARM_UP_FILE DATA_FILE``.
"""

from __future__ import annotations

import contextlib
import json
import sys

SUM = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise LookupError(field)


def evaluate_file(data: str) -> list[dict]:
    from spade_core.evaluation import SuiteContext
    from spade_designer.llm.replay import ReplayBackend
    from spade_eval.harness import evaluate
    from spade_eval.livecodebench import livecodebench_items

    with contextlib.ExitStack() as stack:
        items = livecodebench_items(SuiteContext(None, None, None, stack), data=data, time_limit=3)
        result = evaluate(ReplayBackend(rules=[(".", SUM)]), items, suite="livecodebench", size=1, concurrency=4)
    return [{"label": e.label, "success": e.success, "error": e.error} for e in result.episodes]


def main(argv: list[str]) -> None:
    evaluate_file(argv[0])
    with open("/proc/self/clear_refs", "w") as refs:  # VmHWM from here on is this evaluation's
        refs.write("5")
    before = _status_kb("VmRSS")
    episodes = evaluate_file(argv[1])
    peak = _status_kb("VmHWM")
    print(json.dumps({"episodes": episodes, "grown_mb": (peak - before) / 1024}))


if __name__ == "__main__":
    main(sys.argv[1:])
