"""``python -m spade_tooluse.bfcl``: the self-check's figures as a table; exit 1 on any
replay failure or disagreement with the official checker."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from .loader import CATEGORIES
from .selfcheck import run_suite


def main(argv: Sequence[str] | None = None) -> int:
    from rich.console import Console
    from rich.table import Table

    parser = argparse.ArgumentParser(
        prog="python -m spade_tooluse.bfcl",
        description="Replay every BFCL-v4 multi-turn entry's ground truth and measure agreement with the "
                    "official checker on mutated trajectories.",
    )
    parser.add_argument("--categories", nargs="*", default=list(CATEGORIES), choices=CATEGORIES)
    parser.add_argument("--mutations", type=int, default=300, help="mutated trajectories compared with the official checker")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    console = Console()
    t0 = time.perf_counter()
    report = run_suite(args.categories, mutations=args.mutations, seed=args.seed, progress=True)
    elapsed = time.perf_counter() - t0
    table = Table(title="BFCL-v4 multi-turn suite")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_row("ground-truth replay", f"{report.replay_passed}/{report.entries} pass")
    table.add_row("  recorded calls the official checker accepts", f"{report.replay_official_passed}/{report.entries}")
    for cat, (ok, total) in sorted(report.per_category.items()):
        table.add_row(f"  {cat}", f"{ok}/{total}")
    table.add_row(
        "agreement with official checker",
        f"{100 * report.agreement:.1f}% on {report.mutated} mutated trajectories",
    )
    for kind, (ok, total) in sorted(report.per_mutation.items()):
        table.add_row(f"  {kind}", f"{ok}/{total}")
    table.add_row("mutated trajectories the official checker accepts", str(report.official_valid))
    table.add_row("wall time", f"{elapsed:.1f} s")
    console.print(table)
    for d in report.disagreements[:10]:
        console.print(f"[yellow]disagreement[/]: {d}")
    for f in report.replay_failures[:10]:
        console.print(f"[red]replay failure[/]: {f}")
    return 0 if report.replay_passed == report.entries and not report.disagreements else 1
