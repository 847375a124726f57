"""Static-stage time against source size, on crafted shapes (issue 16, class 3).

Run: ``python -m bench.bench_static`` (or ``python -m bench static``).

What the host runs over candidate source before any sandbox: the sandbox's static layer
(``spade_sandbox.check_source``, which every ``SandboxPool.spawn`` runs, up to its 512,000
character cap) and the validation pipeline's static stage (which adds its own parse and
checks, and calls the former). Each shape is scaled to 8, 32, 128 and 500 KB; for the
validation stage the source caps are lifted so that the rows show how the work grows (its
defaults refuse anything over 64,000 bytes or 2,000 lines before parsing). Columns: median
CPU time of ``REPEATS`` runs, time per KB (constant when the work is linear), and the
longest time a ticker thread waiting 1 ms was kept from running while the check ran (the
GIL held in one C call: a parse or compile of the whole source). Times are the checking
thread's CPU time, so that other work on a shared machine does not inflate them.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable

from rich.console import Console
from rich.table import Table

REPEATS = 3
SIZES_KB = (8, 32, 128, 500)
ENV = (
    "\n\nclass BenchEnv:\n    def reset(self, seed=None):\n        return 'ready', {}\n"
    "    def step(self, action):\n        return 'x', 0.0, True, False, {}\n"
)


def _fill(unit: str, size: int) -> str:
    return unit * max(1, size // len(unit))


#: name -> source of about ``size`` characters.
SHAPES: dict[str, Callable[[int], str]] = {
    "one string of '{' + '_'": lambda n: f"S = {('{' + _fill('_', n - 16))!r}" + ENV,
    "one string of '{ gi_'": lambda n: f"S = {_fill('{ gi_', n - 16)!r}" + ENV,
    "one string of '{'": lambda n: f"S = {_fill('{', n - 16)!r}" + ENV,
    "100-term sums, one a line": lambda n: "a = 1\n" + _fill("x = " + " + ".join(["a"] * 100) + "\n", n) + ENV,
    "calls nested 150 deep": lambda n: "def f(x=0):\n    return x\n" + _fill("y = " + "f(" * 150 + ")" * 150 + "\n", n) + ENV,
    "many names": lambda n: "".join(f"v{i:07d} = 0\n" for i in range(n // 13)) + ENV,
    "typical env, repeated methods": lambda n: "import random\n" + "".join(
        f"def helper_{i:05d}(state, action):\n    if action == 'up':\n        state['n'] += 1\n"
        f"    return '{{}} moved'.format(state['n'])\n" for i in range(n // 121)
    ) + ENV,
}


def _ticker_gap(fn: Callable[[], object]) -> tuple[float, float]:
    """CPU time of ``fn`` (this thread's: the machine is shared, wall time measures the
    neighbours) and the longest gap a 1 ms ticker thread saw meanwhile."""
    stop = threading.Event()
    gaps: list[float] = []

    def tick() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    t = threading.Thread(target=tick)
    t.start()
    time.sleep(0.005)
    start = time.thread_time()
    fn()
    wall = time.thread_time() - start
    stop.set()
    t.join()
    return wall, max(gaps, default=0.0)


def _sandbox_check(source: str) -> object:
    from spade_sandbox import check_source

    return check_source(source)


def _validation_stage(source: str) -> object:
    from spade_designer.validation.config import ValidationConfig
    from spade_designer.validation.context import Candidate, Run
    from spade_designer.validation.runner import Rejection
    from spade_designer.validation.stages import static

    config = ValidationConfig(max_source_bytes=600_000, max_source_lines=200_000)
    run = Run(candidate=Candidate(source=source, max_turns=10, reward_range=(0.0, 1.0)), config=config, runner=None)
    try:
        return static.check(run)
    except Rejection as rejection:
        return rejection


def table(console: Console, title: str, check: Callable[[str], object]) -> None:
    out = Table(title=f"{title} (median of {REPEATS})")
    for col in ("shape", *(f"{kb} KB CPU ms" for kb in SIZES_KB), "us/KB at 8 / 500 KB", "longest GIL hold ms", "verdict at 500 KB"):
        out.add_column(col, justify="left" if col == "shape" else "right")
    for name, make in SHAPES.items():
        row, per_kb, hold, verdict = [], [], 0.0, ""
        for kb in SIZES_KB:
            walls = []
            for r in range(REPEATS):
                # A fresh comment each time: a source that passed is answered from a cache.
                source = make(kb * 1000 - 40) + f"\n# run {r} {time.perf_counter_ns()}\n"
                wall, gap = _ticker_gap(lambda s=source: check(s))
                walls.append(wall)
                hold = max(hold, gap)
            med = statistics.median(walls)
            row.append(f"{med * 1e3:.1f}")
            per_kb.append(med * 1e6 / kb)
            if kb == SIZES_KB[-1]:
                result = check(make(kb * 1000 - 40) + f"\n# v {time.perf_counter_ns()}\n")
                verdict = (result.summary() if hasattr(result, "summary") else str(result))[:40]
        out.add_row(name, *row, f"{per_kb[0]:.0f} / {per_kb[-1]:.0f}", f"{hold * 1e3:.1f}", verdict)
    console.print(out)


def main() -> None:
    console = Console()
    table(console, "sandbox static layer: check_source", _sandbox_check)
    table(console, "validation static stage (source caps lifted)", _validation_stage)


if __name__ == "__main__":
    main()
