"""Validation pipeline benchmarks: end-to-end latency, batch throughput, cheap rejections.

Run: ``python -m bench.bench_validation`` (or ``python -m bench validation``).
Targets from the issue: a typical seed environment validates end to end (all stages,
about 200 fuzz steps) in under 0.5 s; at least 10 candidates per second through the
sandbox pool; rejecting a syntax error or a banned import costs under 5 ms. The machine
is shared: every figure is a median, and ratios compare runs made side by side.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "validation" / "corpus"
REPEATS = 5


def _median_time(fn, repeats: int = REPEATS) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def _seed_envs():
    from spade_core.metadata import EnvMetadata
    from spade_core.plugins import get_plugins

    out = []
    for dom in get_plugins().domains().values():
        for seed in dom.seed_envs[:4]:
            meta = EnvMetadata(name=seed.name, domain=dom.name, skill=seed.skill, max_turns=seed.max_turns, class_name=seed.class_name)
            out.append((seed.id, seed.source(), meta, dom))
    for name in ("guess_number", "hanoi", "key_door", "tool_shop"):
        out.append((f"corpus/{name}", (CORPUS / "good" / f"{name}.py").read_text(), None, None))
    return out


def latency(console: Console) -> None:
    from spade_designer.validation import Validator

    table = Table(title=f"end-to-end validation, warm pool (median of {REPEATS})")
    for col in ("environment", "verdict", "fuzz steps", "fuzz s", "degenerate s", "total s", "caller CPU s", "vs 0.5 s"):
        table.add_column(col, justify="left" if col == "environment" else "right")
    totals = []
    with Validator() as validator:
        validator.validate((CORPUS / "good" / "guess_number.py").read_text())  # start the zygote
        for name, source, meta, dom in _seed_envs():
            cpu0 = time.process_time()
            med, report = _median_time(lambda s=source, m=meta, d=dom: validator.validate(s, metadata=m, domain=d))
            cpu = (time.process_time() - cpu0) / REPEATS
            fuzz = [f.message for f in report.findings if f.stage == "fuzz" and f.ok]
            steps = fuzz[0].split(", ")[1].split()[0] if fuzz else "-"
            totals.append(med)
            table.add_row(
                name,
                "pass" if report.passed else f"reject {report.failed_stage}",
                steps,
                f"{report.timings.get('fuzz', 0):.3f}",
                f"{report.timings.get('degenerate', 0):.3f}",
                f"{med:.3f}",
                f"{cpu:.3f}",
                f"{med / 0.5:.2f}x",
            )
    console.print(table)
    console.print(
        f"median over environments: {statistics.median(totals):.3f} s (target < 0.5 s); "
        "caller CPU is this process only (Hypothesis, checks, IPC), the rest is worker time and waiting"
    )


def throughput(console: Console) -> None:
    from spade_designer.validation import ValidationRequest, Validator

    sources = [p.read_text() for p in sorted((CORPUS / "good").glob("*.py"))]
    requests = [ValidationRequest(s) for s in sources]
    table = Table(title=f"batch throughput: {len(requests)} distinct candidates (corpus/good)")
    for col in ("mode", "workers", "seconds", "candidates/s", "vs sequential"):
        table.add_column(col, justify="left" if col == "mode" else "right")
    with Validator() as validator:
        validator.validate(sources[0])
        t0 = time.perf_counter()
        for r in requests:
            validator.validate(r.source)
        seq = time.perf_counter() - t0
        table.add_row("validate() one by one", "1", f"{seq:.2f}", f"{len(requests) / seq:.1f}", "1.00x")
        for workers in (2, 4):
            t0 = time.perf_counter()
            reports = validator.validate_many(requests, max_workers=workers)
            dt = time.perf_counter() - t0
            assert all(r.passed for r in reports)
            table.add_row("validate_many()", str(workers), f"{dt:.2f}", f"{len(requests) / dt:.1f}", f"{seq / dt:.2f}x")
    console.print(table)
    console.print("target: at least 10 candidates/s")
    if os.getloadavg()[0] > (os.cpu_count() or 1):
        console.print(f"[yellow]note: load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs: the machine is oversubscribed")


def rejections(console: Console) -> None:
    from spade_designer.validation import Validator

    cases = {
        "syntax error": (CORPUS / "bad" / "s_syntax_error.py").read_text(),
        "banned import": (CORPUS / "bad" / "s_banned_import_os.py").read_text(),
        "oversized source": (CORPUS / "bad" / "s_oversized.py").read_text(),
    }
    table = Table(title="cheap rejections (median of 50; no sandbox involved)")
    for col in ("case", "stage", "reason", "ms", "vs 5 ms"):
        table.add_column(col, justify="left" if col in ("case", "stage", "reason") else "right")
    validator = Validator()
    for name, source in cases.items():
        validator.validate(source)
        med, report = _median_time(lambda s=source: validator.validate(s), 50)
        finding = [f for f in report.findings if not f.ok][0]
        table.add_row(name, report.failed_stage or "-", finding.code or "-", f"{1000 * med:.2f}", f"{1000 * med / 5:.2f}x")
    assert validator._pool is None, "a static rejection must not start the sandbox"
    console.print(table)


def main() -> None:
    console = Console()
    rejections(console)
    latency(console)
    throughput(console)


if __name__ == "__main__":
    main()
