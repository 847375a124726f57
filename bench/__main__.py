"""Run every benchmark module (``bench/bench_*.py``) and let each print its table.

Usage: ``python -m bench [NAME ...]`` where NAME filters modules (``core``, ``sandbox``...).
Machines are shared and noisy: each module reports medians and side-by-side ratios.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from pathlib import Path

from rich.console import Console


def main(argv: list[str]) -> int:
    console = Console()
    wanted = set(argv)
    names = sorted(
        m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)])
        if m.name.startswith("bench_")
    )
    failed = []
    for name in names:
        short = name.removeprefix("bench_")
        if wanted and short not in wanted and name not in wanted:
            continue
        console.rule(f"[bold]{short}")
        t0 = time.perf_counter()
        try:
            module = importlib.import_module(f"bench.{name}")
            module.main()
        except Exception as exc:  # one broken benchmark must not hide the others
            failed.append(name)
            console.print(f"[red]{name} failed: {type(exc).__name__}: {exc}")
        console.print(f"[dim]{short}: {time.perf_counter() - t0:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
