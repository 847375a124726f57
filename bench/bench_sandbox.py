"""Sandbox benchmark: cold start, step round trip (same core / cross core), batched steps,
and 1,000 live instances of 100 environments with per-worker memory (USS).

Run: ``python -m bench.bench_sandbox`` (or ``python -m bench sandbox``). Prints one rich
table: medians, p90, the baseline measured in the same run, and the ratio to it. The
machine is shared and noisy, so every figure is a median of many repetitions.
"""

from __future__ import annotations

import gc
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil
from rich.console import Console
from rich.progress import Progress
from rich.table import Table
from spade_sandbox.backends import ZygoteBackend

from spade_sandbox import SandboxLimits, SandboxPool

TRIVIAL = '''
class TrivialEnv:
    def __init__(self):
        self.n = 0
    def reset(self, seed=None):
        self.n = 0
        return "start", {}
    def step(self, action):
        self.n += 1
        return "ok", 0.0, False, False, {}
'''


@dataclass
class Row:
    metric: str
    target: str
    median: float
    p90: float
    unit: str
    baseline: float | None = None
    baseline_name: str = ""
    ok: bool | None = None

    @property
    def ratio(self) -> str:
        if not self.baseline:
            return "-"
        return f"{self.median / self.baseline:.1f}x {self.baseline_name}"


def _q(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def _variant(i: int) -> str:
    return TRIVIAL + f"\n# variant {i}\n"


def bench_cold_start(progress: Progress, n: int = 25) -> list[Row]:
    rows = []
    task = progress.add_task("cold start", total=4 * n)

    def spawns(pool: SandboxPool, pause: float) -> list[float]:
        pool.spawn(_variant(-1))
        out = []
        for i in range(n):
            time.sleep(pause)
            t0 = time.perf_counter()
            pool.spawn(_variant(i))
            out.append(time.perf_counter() - t0)
            progress.advance(task)
        return out

    fresh: list[float] = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True)
        fresh.append(time.perf_counter() - t0)
        progress.advance(task)
    base = statistics.median(fresh) * 1e3
    with SandboxPool(backend=ZygoteBackend(spare=True)) as pool:
        warm = spawns(pool, 0.1)
    with SandboxPool(backend=ZygoteBackend(spare=False)) as pool:
        cold = spawns(pool, 0.0)
    bare = SandboxLimits(namespaces=False, landlock=False, seccomp=False, drop_uid=False)
    with SandboxPool(bare, backend=ZygoteBackend(spare=False), allow_insecure=True) as pool:
        unhardened = spawns(pool, 0.0)
    ms = [1e3 * statistics.median(v) for v in (warm, cold, unhardened)]
    rows.append(Row("cold start: spawn -> ready (pre-hardened spare)", "< 5 ms", ms[0], 1e3 * _q(warm, 0.9), "ms",
                    base, "python -S start", ms[0] < 5))
    rows.append(Row("cold start: fork + harden + load (no spare)", "-", ms[1], 1e3 * _q(cold, 0.9), "ms",
                    base, "python -S start"))
    rows.append(Row("cold start: fork + load, no OS layers", "-", ms[2], 1e3 * _q(unhardened, 0.9), "ms",
                    base, "python -S start"))
    return rows


def _cpu(pids: list[int]) -> float:
    """CPU seconds used so far by this process and ``pids`` (user + system)."""
    total = time.process_time()
    for pid in pids:
        t = psutil.Process(pid).cpu_times()
        total += t.user + t.system
    return total


def _pin(pid: int, cpu: int) -> bool:
    try:
        os.sched_setaffinity(pid, {cpu})
        return True
    except OSError:
        return False


def in_process_step_us(n: int = 20_000) -> float:
    """Median cost of the same trivial step called directly in this process (the baseline)."""
    ns: dict[str, object] = {}
    exec(compile(TRIVIAL, "<trivial>", "exec"), ns)
    local = ns["TrivialEnv"]()  # type: ignore[operator]
    local.reset()
    per = []
    for _ in range(20):
        t0 = time.perf_counter()
        for _ in range(n // 20):
            local.step("a")
        per.append((time.perf_counter() - t0) / (n // 20))
    return statistics.median(per) * 1e6


def raw_socketpair_rtt_us(cpu: int, n: int = 3000) -> float:
    """Floor of any process sandbox here: a 20-byte ping-pong between two Python processes
    over a socketpair, with no framing, encoding or checks."""
    a, b = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # the echo child
        a.close()
        try:
            while True:
                data = b.recv(64)
                if not data:
                    break
                b.send(data)
        finally:
            os._exit(0)
    b.close()
    _pin(pid, cpu)
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        a.send(b"x" * 20)
        a.recv(64)
        times.append(time.perf_counter() - t0)
    a.close()
    os.waitpid(pid, 0)
    return statistics.median(times) * 1e6


def bench_round_trip(progress: Progress, base: float, n: int = 3000) -> list[Row]:
    rows = []
    ncpu = len(os.sched_getaffinity(0))
    task = progress.add_task("step round trip", total=2 * n)
    original = os.sched_getaffinity(0)
    with SandboxPool() as pool:
        h = pool.spawn(TRIVIAL)
        pool.reset(h)
        worker = pool.worker_of(h).pid
        for label, cpu in (("same core", 0), ("cross core", 1)):
            if cpu >= ncpu or not (_pin(0, 0) and _pin(worker, cpu)):
                progress.advance(task, n)
                continue
            floor = raw_socketpair_rtt_us(cpu)
            times = []
            for _ in range(200):
                pool.step(h, "a")
            c0 = _cpu([worker])
            for _ in range(n):
                t0 = time.perf_counter()
                pool.step(h, "a")
                times.append(time.perf_counter() - t0)
                progress.advance(task)
            cpu_us = (_cpu([worker]) - c0) / n * 1e6
            med = statistics.median(times) * 1e6
            rows.append(Row(f"step() round trip, {label}", "< 20 us" if cpu == 0 else "report", med,
                            _q(times, 0.9) * 1e6, "us", floor, "raw socketpair RTT", med < 20 if cpu == 0 else None))
            rows.append(Row(f"  CPU time per step() (both processes), {label}", "report", cpu_us, cpu_us, "us",
                            base, "in-process step"))
    os.sched_setaffinity(0, original)
    return rows


def bench_batched(progress: Progress, base: float, reps: int = 40) -> list[Row]:
    rows = []
    task = progress.add_task("batched steps", total=2 * reps)
    with SandboxPool() as pool:
        one = [pool.spawn(TRIVIAL) for _ in range(256)]
        spread = [pool.spawn(_variant(i % 16)) for i in range(256)]
        pool.reset_many([(h, None) for h in one + spread])
        for label, handles in (("256 instances, 1 worker", one), ("256 instances, 16 workers", spread)):
            items = [(h, "a") for h in handles]
            pool.step_many(items)
            per = []
            pids = sorted({pool.worker_of(h).pid for h in handles})
            c0 = _cpu(pids)
            for _ in range(reps):
                t0 = time.perf_counter()
                results = pool.step_many(items)
                per.append((time.perf_counter() - t0) / len(items))
                progress.advance(task)
            assert all(isinstance(r, tuple) for r in results)
            med = statistics.median(per) * 1e6
            target = "< 2 us/env-step" if "1 worker" in label else "report"
            cpu_us = (_cpu(pids) - c0) / reps / len(items) * 1e6
            rows.append(Row(f"step_many, {label}", target, med, _q(per, 0.9) * 1e6, "us/step",
                            base, "in-process step", med < 2 if "1 worker" in label else None))
            rows.append(Row(f"  CPU time per env-step (all processes), {label}", "report", cpu_us, cpu_us,
                            "us/step", base, "in-process step"))
    return rows


def bench_scale(progress: Progress, envs: int = 100, per_env: int = 10) -> list[Row]:
    rows = []
    task = progress.add_task(f"{envs * per_env} instances / {envs} envs", total=envs * per_env + envs)
    with SandboxPool() as pool:
        t0 = time.perf_counter()
        handles = []
        for i in range(envs):
            for _ in range(per_env):
                handles.append(pool.spawn(_variant(1000 + i)))
                progress.advance(task)
        spawn_s = time.perf_counter() - t0
        pool.reset_many([(h, i) for i, h in enumerate(handles)])
        results = pool.step_many([(h, "a") for h in handles])
        live = sum(isinstance(r, tuple) for r in results)
        workers = pool.workers()
        uss = []
        for w in workers:
            uss.append(psutil.Process(w.pid).memory_full_info().uss / 2**20)
            progress.advance(task)
        steps = []
        items = [(h, "a") for h in handles]
        for _ in range(10):
            t1 = time.perf_counter()
            pool.step_many(items)
            steps.append((time.perf_counter() - t1) / len(items))
    rows.append(Row(f"live instances answering (of {envs * per_env}) in {len(workers)} workers",
                    ">= 1000 in >= 100", float(live), float(live), "instances", None, "",
                    live >= 1000 and len(workers) >= 100))
    rows.append(Row("worker USS (own memory)", "< 8 MB each", statistics.median(uss), max(uss), "MiB (p90 col = max)",
                    None, "", max(uss) < 8))
    rows.append(Row("spawning all instances", "report", spawn_s, spawn_s, "s"))
    rows.append(Row("step_many over all instances", "report", statistics.median(steps) * 1e6,
                    _q(steps, 0.9) * 1e6, "us/step"))
    return rows


BUSY = """
class BusyEnv:
    def reset(self, seed=None):
        return "start", {}
    def step(self, action):
        total = 0
        for i in range(3000):
            total += i * i % 7
        return str(total), 0.0, False, False, {}
"""


def bench_backends(progress: Progress, reps: int = 60) -> list[Row]:
    """Cost of running environment code: a step doing ~3,000 loop iterations, directly in
    this process, in a native worker, and under the in-process restricted backend."""
    task = progress.add_task("backends: busy step", total=3 * reps)
    ns: dict[str, object] = {}
    exec(compile(BUSY, "<busy>", "exec"), ns)
    local = ns["BusyEnv"]()  # type: ignore[operator]

    def timed(step) -> float:
        step()
        per = []
        for _ in range(reps):
            t0 = time.perf_counter()
            step()
            per.append(time.perf_counter() - t0)
            progress.advance(task)
        return statistics.median(per) * 1e6

    direct = timed(lambda: local.step("a"))
    rows = []
    with SandboxPool() as pool:
        h = pool.spawn(BUSY)
        native = timed(lambda: pool.step(h, "a"))
    rows.append(Row("busy step(), native worker", "report", native, native, "us", direct, "in-process step"))
    try:
        with SandboxPool(backend="restricted", allow_insecure=True) as pool:
            h = pool.spawn(BUSY)
            restricted = timed(lambda: pool.step(h, "a"))
        rows.append(Row("busy step(), restricted backend (not a boundary)", "report", restricted, restricted, "us",
                        direct, "in-process step"))
    except Exception as exc:  # RestrictedPython not installed: say so in the table
        rows.append(Row(f"restricted backend unavailable: {exc}", "-", 0.0, 0.0, "-"))
    return rows


def bench_domain_worker_memory() -> list[Row]:
    """USS of a worker running a tool-use seed environment (its helper module pulls in more)."""
    try:
        import spade_tooluse
    except ImportError:
        return []
    envs = sorted(p for p in (Path(spade_tooluse.__file__).parent / "envs").glob("*.py") if p.name != "__init__.py")
    if not envs:
        return []
    with SandboxPool() as pool:
        h = pool.spawn(envs[0].read_text(), allowed_modules=["spade_tooluse.base"])
        pool.reset(h, seed=1)
        pool.step(h, '<tool_call>{"name": "nothing", "arguments": {}}</tool_call>')
        uss = psutil.Process(pool.worker_of(h).pid).memory_full_info().uss / 2**20
    return [Row(f"worker USS, tool-use env ({envs[0].stem})", "< 8 MB", uss, uss, "MiB", None, "", uss < 8)]


def main() -> None:
    console = Console()
    gc.collect()
    load = os.getloadavg()
    rows: list[Row] = []
    with Progress(console=console, transient=True) as progress:
        rows += bench_cold_start(progress)
        base = in_process_step_us()
        rows += bench_round_trip(progress, base)
        rows += bench_batched(progress, base)
        rows += bench_scale(progress)
        rows += bench_domain_worker_memory()
        rows += bench_backends(progress)
    table = Table(expand=True, title=f"spade_sandbox (native backend, {len(os.sched_getaffinity(0))} CPUs, "
                        f"load avg {load[0]:.1f})")
    for col in ("metric", "target", "median", "p90", "unit", "baseline (same run)", "ratio", "ok"):
        table.add_column(col, justify="right" if col in ("median", "p90") else "left")
    for r in rows:
        ok = "-" if r.ok is None else ("[green]yes" if r.ok else "[red]no")
        base = "-" if r.baseline is None else f"{r.baseline:.2f} ({r.baseline_name})"
        table.add_row(r.metric, r.target, f"{r.median:.2f}", f"{r.p90:.2f}", r.unit, base, r.ratio, ok)
    console.print(table)
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "sandbox.json").write_text(json.dumps([asdict(r) for r in rows], indent=2))


if __name__ == "__main__":
    main()
