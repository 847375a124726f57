"""Where evaluation results are kept, and how they are shown (every text from the data or
the policy through :func:`spade_core.terminal.escape`: a group named with an escape
sequence is shown, never obeyed).

``spade eval --run RUN_DIR`` appends each result to ``RUN_DIR/evals.jsonl`` (with the
run's iteration), which ``spade compare`` and the run report read; otherwise results go to
``SPADE_HOME/evals/<suite>-<time>.json``. Each line is :meth:`EvalResult.to_json` without
the per-episode rows (those stay in the ``--json`` output).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.table import Table
from spade_core.app.eval_harness import EVALS_FILE, append_to_run
from spade_core.app.jsonl import read_jsonl  # the one reader of a run's JSON-lines files
from spade_core.terminal import escape

from .harness import EvalResult, GroupStats

__all__ = ["EVALS_FILE", "columns_table", "read_evals", "read_jsonl", "result_table", "run_iteration", "store_result",
           "unavailable_lines"]


def run_iteration(run: Path) -> int | None:
    """The last iteration a run's metrics record (``None`` before the first)."""
    last = None
    for record in read_jsonl(run / "metrics.jsonl"):
        last = record.get("iteration", last)
    return last


def store_result(result: EvalResult, *, run: Path | None, home: Path) -> Path:
    """Keep ``result``: appended to the run's ``evals.jsonl``, or a file under ``home/evals``."""
    if run is not None:
        return append_to_run(result, run)
    record = result.to_json(with_episodes=False)
    folder = home / "evals"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = result.started_at.replace(":", "").replace("-", "").replace("+0000", "Z")
    path = folder / f"{result.suite}-{stamp}.json"
    path.write_text(json.dumps(record, indent=2, sort_keys=True), encoding="utf-8")
    return path


def read_evals(run: Path) -> list[dict[str, Any]]:
    return read_jsonl(run / EVALS_FILE)


def _ci(lo: float, hi: float) -> str:
    return f"[{lo:.2f}, {hi:.2f}]"


def result_table(result: EvalResult) -> Table:
    table = Table(title=escape(f"{result.suite}: {result.policy} ({result.snapshot})"), title_justify="left")
    table.add_column("group", overflow="fold")
    for col in ("n", "success [95% CI]", "return [95% CI]", "turns", "errors"):
        table.add_column(col, justify="right", no_wrap=True)

    def row(name: str, s: GroupStats, style: str | None = None) -> None:
        ret = f"{s.mean_return:.3f} {_ci(*s.return_ci)}" if s.n > 1 else f"{s.mean_return:.3f}"
        table.add_row(escape(name), str(s.n), f"{s.success_rate:.0%} {_ci(*s.success_ci)}", ret,
                      f"{s.mean_turns:.1f}", str(s.errors), style=style)

    for name, stats in result.groups.items():
        row(name, stats)
    row("all", result.overall, style="bold")
    return table


def columns_table(result: EvalResult) -> Table:
    """The suite's summary columns: mean win rate of each column's tasks."""
    table = Table(title=escape(f"{result.suite}: columns (mean of the tasks' win rates)"), title_justify="left")
    for col in ("column", "win rate [95% CI]", "tasks scored", "episodes", "unavailable"):
        table.add_column(col, justify="left" if col in ("column", "unavailable") else "right", no_wrap=col != "unavailable")
    for name, c in result.columns.items():
        table.add_row(escape(name), f"{c.success_rate:.1%} {_ci(*c.interval)}", f"{c.scored}/{c.tasks}", str(c.episodes),
                      escape(", ".join(g.split("/")[-1] for g in c.unavailable) or "-"))
    return table


def unavailable_lines(result: EvalResult) -> list[str]:
    """One line per task whose environments could not be built, with the first error (data's
    text: print it through :func:`spade_core.terminal.printable`, as the command does)."""
    lines = []
    for column in result.columns.values():
        for group in column.unavailable:
            error = next((e.error for e in result.episodes if e.group == group and e.error), "")
            lines.append(f"unavailable, left out of its column: {group}: {error}")
    return lines
