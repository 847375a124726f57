"""Where a self-play run's time went, per iteration and stage, read from its ``metrics.jsonl``.

    python -m spade_trainer.timings RUN_DIR

The stages are the loop's own wall-clock timings: design (generation, validation,
admission), hints, rollouts (hinted and unhinted plays), update (TRL's GRPO step, the
step time minus the collection) and registration. ``scripts/gpu_quickstart.sh`` prints
this table after its run.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import TrainerError
from .metrics import METRICS_FILE

#: ``(column, timings key)`` in loop order.
STAGES: tuple[tuple[str, str], ...] = (
    ("design", "design_s"),
    ("hints", "hint_s"),
    ("rollouts", "rollout_s"),
    ("update", "update_s"),
    ("register", "register_s"),
)


@dataclass(frozen=True)
class IterationTimes:
    """Seconds per stage of one iteration (``None``: the stage was not timed)."""

    iteration: int
    stages: dict[str, float | None]

    @property
    def total(self) -> float:
        return sum(v for v in self.stages.values() if v is not None)


def read_times(run_dir: Path) -> list[IterationTimes]:
    """The stage times of every iteration recorded in ``run_dir/metrics.jsonl``."""
    path = Path(run_dir) / METRICS_FILE
    if not path.is_file():
        raise TrainerError(f"{path} does not exist: not a self-play run folder, or no iteration finished yet")
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            timings = record.get("timings") or {}
            stages = {name: (float(timings[key]) if timings.get(key) is not None else None) for name, key in STAGES}
            out.append(IterationTimes(int(record["iteration"]), stages))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise TrainerError(f"{path}:{n}: not an iteration record ({exc})") from None
    return out


def times_table(times: list[IterationTimes], title: str = "self-play stage times (s, wall)") -> object:
    """A rich table: one row per iteration, one column per stage, and a total row."""
    from rich.table import Table

    table = Table(title=title)
    table.add_column("iteration", justify="right")
    for name, _ in STAGES:
        table.add_column(name, justify="right")
    table.add_column("total", justify="right")

    def cell(v: float | None) -> str:
        return "-" if v is None else f"{v:.1f}"

    for t in times:
        table.add_row(str(t.iteration), *(cell(t.stages[name]) for name, _ in STAGES), cell(t.total))
    if times:
        sums = {name: sum(t.stages[name] or 0.0 for t in times) for name, _ in STAGES}
        table.add_row("all", *(cell(sums[name]) for name, _ in STAGES), cell(sum(sums.values())), style="bold")
    return table


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m spade_trainer.timings RUN_DIR", file=sys.stderr)
        return 2
    try:
        times = read_times(Path(args[0]))
    except TrainerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    Console().print(times_table(times))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
