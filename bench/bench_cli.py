"""Import / export benchmarks (the machinery behind ``spade import`` / ``spade export``).

Run: ``python -m bench.bench_cli`` (or ``python -m bench cli``).

A synthetic pool of distinct environments (the reference-format test fixtures, each copy
made unique) is written as JSONL and Parquet and imported into fresh SQLite stores. Each
operation runs ``REPEAT`` times; the table shows the median and, side by side, the ratio
to the bare store write of the same items (``EnvStore.add_many``), which is the floor any
import pays. Machines are shared and noisy: compare ratios, not absolute seconds.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table
from spade_core.app.exporter import export_envs, iter_envs
from spade_core.app.importer import ImportOptions, import_items, prepare, read_items
from spade_core.store import EnvStore

N_ITEMS = 300
REPEAT = 3
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "core" / "fixtures" / "reference_envs"


def _pool(folder: Path) -> Path:
    codes = [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.glob("*.py"))]
    path = folder / "pool.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for i in range(N_ITEMS):
            row = {"env_name": f"game_{i}", "env_code": codes[i % len(codes)] + f"\n# copy {i}\n", "skill": "bench"}
            fh.write(json.dumps(row) + "\n")
    return path


def median_seconds(fn: Callable[[int], object]) -> float:
    """Median wall seconds of ``REPEAT`` calls ``fn(0)``, ``fn(1)``, ... (also bench_hub's)."""
    samples = []
    for rep in range(REPEAT):
        t0 = time.perf_counter()
        fn(rep)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    console = Console()
    options = ImportOptions(domain="games")
    with tempfile.TemporaryDirectory(prefix="spade-bench-cli-") as tmp:
        root = Path(tmp)
        jsonl = _pool(root)
        items = list(read_items(jsonl))
        prepared = [prepare(i, options) for i in items]

        def store(name: str) -> EnvStore:
            return EnvStore(f"sqlite:///{root / name}.db")

        def bare_write(rep: int) -> None:
            with store(f"bare{rep}") as s:
                s.add_many([(p.source, p.metadata) for p in prepared])

        def prepare_only(rep: int) -> None:
            for item in items:
                prepare(item, options)

        def import_jsonl(rep: int) -> None:
            with store(f"jsonl{rep}") as s:
                report = import_items(s, read_items(jsonl), options)
                assert report.count("imported") == N_ITEMS, report.outcomes[:3]

        def reimport(rep: int) -> None:
            with store("jsonl0") as s:
                report = import_items(s, read_items(jsonl), options)
                assert report.count("unchanged") == N_ITEMS

        results: list[tuple[str, float]] = []
        progress = console.status("measuring")
        with progress:
            results.append(("store.add_many (floor)", median_seconds(bare_write)))
            results.append(("prepare only (parse + validate)", median_seconds(prepare_only)))
            results.append(("import JSONL, fresh store", median_seconds(import_jsonl)))
            results.append(("re-import JSONL (all unchanged)", median_seconds(reimport)))
            with store("jsonl0") as s:
                results.append(
                    ("export JSONL", median_seconds(lambda rep: export_envs(iter_envs(s), root / f"out{rep}.jsonl")))
                )
                results.append(
                    ("export Parquet", median_seconds(lambda rep: export_envs(iter_envs(s), root / f"out{rep}.parquet")))
                )

            def import_parquet(rep: int) -> None:
                with store(f"parquet{rep}") as s:
                    report = import_items(s, read_items(root / "out0.parquet"))
                    assert report.count("imported") == N_ITEMS

            results.append(("import Parquet export, fresh store", median_seconds(import_parquet)))

    floor = results[0][1]
    table = Table(title=f"import / export of {N_ITEMS} environments (median of {REPEAT})")
    for col in ("operation", "median s", "envs / s", "x store.add_many"):
        table.add_column(col, justify="left" if col == "operation" else "right")
    for name, seconds in results:
        table.add_row(name, f"{seconds:.3f}", f"{N_ITEMS / seconds:,.0f}", f"{seconds / floor:.2f}")
    console.print(table)


if __name__ == "__main__":
    main()
