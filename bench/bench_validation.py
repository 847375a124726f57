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


def seeding(console: Console) -> None:
    """What fuzzing from the environment itself (templates, mutations, solution prefixes)
    costs: the same environments with ``fuzz_from_environment`` on and off, alternating."""
    from spade_designer.validation import ValidationConfig, Validator

    table = Table(title=f"fuzzing seeded from the environment: added time (alternating, median of {REPEATS})")
    for col in ("environment", "fuzz steps off / on", "fuzz s off / on", "total s off / on", "added s"):
        table.add_column(col, justify="left" if col == "environment" else "right")
    on, off = ValidationConfig(), ValidationConfig(fuzz_from_environment=False)
    added = []
    with Validator() as validator:
        validator.validate((CORPUS / "good" / "guess_number.py").read_text())  # start the zygote
        for name, source, meta, dom in _seed_envs():
            runs: dict[bool, list[tuple[float, object]]] = {True: [], False: []}
            for _ in range(REPEATS):
                for flag, cfg in ((False, off), (True, on)):
                    t0 = time.perf_counter()
                    report = validator.validate(source, metadata=meta, domain=dom, config=cfg)
                    runs[flag].append((time.perf_counter() - t0, report))

            def cell(flag: bool, runs: dict[bool, list[tuple[float, object]]] = runs) -> tuple[str, float, float]:
                totals = [t for t, _ in runs[flag]]
                fuzz = [r.timings.get("fuzz", 0.0) for _, r in runs[flag]]  # type: ignore[attr-defined]
                msg = [f.message for f in runs[flag][-1][1].findings if f.stage == "fuzz" and f.ok]  # type: ignore[attr-defined]
                steps = msg[0].split(", ")[1].split()[0] if msg else "-"
                return steps, statistics.median(fuzz), statistics.median(totals)

            (s0, f0, t0_), (s1, f1, t1) = cell(False), cell(True)
            added.append(t1 - t0_)
            table.add_row(name, f"{s0} / {s1}", f"{f0:.3f} / {f1:.3f}", f"{t0_:.3f} / {t1:.3f}", f"{t1 - t0_:+.3f}")
    console.print(table)
    console.print(f"median added per validation: {statistics.median(added):+.3f} s")


def _tree_cpu(pid: int | None = None) -> float:
    """CPU seconds (user + system) of a process and every live descendant (Linux /proc),
    so validator processes and sandbox workers are counted with the caller."""
    tick = os.sysconf("SC_CLK_TCK")
    todo, total = [pid or os.getpid()], 0.0
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError, IndexError):
            continue
    return total


def throughput(console: Console) -> None:
    from spade_designer.validation import ValidationRequest, Validator
    from spade_designer.validation.pipeline import default_pool

    sources = [p.read_text() for p in sorted((CORPUS / "good").glob("*.py"))]
    rounds = iter(range(10**6))

    def fresh() -> list[ValidationRequest]:
        # New code every round (a comment changes the code hash, not the verdict), as a
        # designer's candidates are: every one needs a sandbox worker of its own.
        r = next(rounds)
        return [ValidationRequest(f"{s}\n# round {r}\n") for s in sources]

    requests = fresh()
    table = Table(title=f"batch throughput: {len(requests)} distinct new candidates (corpus/good), median of 3 rounds")
    for col in ("mode", "workers", "seconds", "candidates/s", "caller CPU s", "all CPU s", "vs one by one"):
        table.add_column(col, justify="left" if col == "mode" else "right")

    def measure(fn) -> tuple[float, float, float]:
        rows = []
        for _ in range(3):
            batch = fresh()
            cpu0, tree0, t0 = time.process_time(), _tree_cpu(), time.perf_counter()
            fn(batch)
            rows.append((time.perf_counter() - t0, time.process_time() - cpu0, _tree_cpu() - tree0))
        return sorted(rows)[1]

    with Validator() as validator:
        validator.validate(sources[0])
        seq, cpu, tree = measure(lambda batch: [validator.validate(r.source) for r in batch])
        table.add_row("validate() one by one", "1", f"{seq:.2f}", f"{len(requests) / seq:.1f}", f"{cpu:.2f}", f"{tree:.2f}", "1.00x")
        pool = default_pool(validator.config)
        try:
            # batch_processes = 1: the thread path (what validate_many did before)
            with Validator(pool=pool, config=validator.config.model_copy(update={"batch_processes": 1})) as threaded:
                threaded.validate(sources[0])
                dt, cpu, tree = measure(lambda batch: threaded.validate_many(batch))
                table.add_row("validate_many(), threads", "4", f"{dt:.2f}", f"{len(requests) / dt:.1f}", f"{cpu:.2f}", f"{tree:.2f}", f"{seq / dt:.2f}x")
        finally:
            pool.close()
        for workers in (2, 3):
            t0 = time.perf_counter()
            validator.validate_many(requests[:workers], max_workers=workers)  # start the processes
            start = time.perf_counter() - t0
            reports: list = []
            dt, cpu, tree = measure(lambda batch, w=workers, out=reports: out.extend(validator.validate_many(batch, max_workers=w)))
            assert all(r.passed for r in reports), [r.reasons for r in reports if not r.passed]
            table.add_row(
                f"validate_many(), processes (start {start:.1f} s, once)", str(workers), f"{dt:.2f}",
                f"{len(requests) / dt:.1f}", f"{cpu:.2f}", f"{tree:.2f}", f"{seq / dt:.2f}x",
            )
    console.print(table)
    console.print(
        "target: at least 10 candidates/s; caller CPU is this process, all CPU adds validator processes and sandbox workers"
    )
    load = os.getloadavg()[0]
    console.print(f"load average {load:.1f} on {os.cpu_count()} CPUs" + (" (oversubscribed)" if load > (os.cpu_count() or 1) else ""))


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


#: Files ``commands`` times: seed games and environments written elsewhere, as files.
COMMAND_FILES = (
    "plugins/games/src/spade_games/envs/code_breaker.py",
    "plugins/games/src/spade_games/envs/fog_maze.py",
    "tests/validation/corpus_ext/good/ref_high_low.py",
    "tests/validation/corpus_ext/good/tool_ref_lookup.py",
)


def _baseline_env(baseline: Path | None) -> dict[str, str] | None:
    """An environment whose PYTHONPATH puts a baseline checkout's packages first."""
    if baseline is None:
        return None
    paths = sorted(str(p) for p in baseline.glob("*/src")) + sorted(str(p) for p in baseline.glob("plugins/*/src"))
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def commands(console: Console, baseline: Path | None = None, repeats: int = REPEATS) -> None:
    """``spade validate FILE`` and ``spade fuzz FILE`` (200 examples) as whole processes, as
    a user runs them: median wall seconds of ``repeats`` runs each; with a baseline checkout
    (``--baseline DIR``), its run alternates with this one's and the ratio is taken pair by
    pair (the machine's speed drifts, a pair shares it)."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    spade = [sys.executable, "-c", "from spade_core.app.cli import main; main()"]
    base_env = _baseline_env(baseline)
    table = Table(title=f"spade validate / spade fuzz FILE, whole process (median of {repeats})")
    for col in ("file", "command", "this s", "baseline s", "ratio"):
        table.add_column(col, justify="left" if col in ("file", "command") else "right")

    def run(cmd: list[str], env: dict[str, str] | None) -> float:
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        return time.perf_counter() - t0

    for rel in COMMAND_FILES:
        for verb in ("validate", "fuzz"):
            cmd = [*spade, verb, rel, "--json"]
            run(cmd, None)  # warm the page cache and the seed index
            ours, theirs, ratios = [], [], []
            for _ in range(repeats):
                ours.append(run(cmd, None))
                if base_env is not None:
                    theirs.append(run(cmd, base_env))
                    ratios.append(ours[-1] / theirs[-1])
            table.add_row(Path(rel).stem, verb, f"{statistics.median(ours):.2f}",
                          f"{statistics.median(theirs):.2f}" if theirs else "-",
                          f"{statistics.median(ratios):.2f}x" if ratios else "-")
    console.print(table)
    console.print(f"load average at the end: {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")


def main(argv: list[str] | None = None) -> None:
    import argparse
    import sys

    parts = {"rejections": rejections, "latency": latency, "throughput": throughput, "seeding": seeding,
             "commands": commands}
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="*", default=[], help=f"any of {', '.join(parts)} (default: all but commands)")
    parser.add_argument("--baseline", type=Path, default=None, help="a checkout to time `commands` against")
    args = parser.parse_args(argv if argv is not None else sys.argv[1:])
    chosen = [p for p in args.parts if p in parts]  # `python -m bench validation` passes its own words
    console = Console()
    for name in chosen or [p for p in parts if p != "commands"]:
        if name == "commands":
            commands(console, args.baseline)
        else:
            parts[name](console)


if __name__ == "__main__":
    main()
