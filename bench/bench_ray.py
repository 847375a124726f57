"""Ray executor benchmark: the same environment operations through the local sandbox pool
and through :class:`spade_trainer.distributed.RayEnvPool` on a local Ray instance.

Run: ``python -m bench.bench_ray`` (or ``python -m bench ray``). Needs the ``ray`` extra.
Prints one rich table of medians (many repetitions; the machine is shared and noisy) with
the ratio Ray / local: on one machine it is the price of the extra hop (driver -> actor ->
sandbox worker); Ray pays back only when the actors sit on other nodes' CPUs.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

BATCH = 32
REPEATS = 30


def _median_s(fn: Callable[[], Any], repeats: int, progress: Progress, label: str) -> float:
    task = progress.add_task(label, total=repeats)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        progress.advance(task)
    return statistics.median(times)


def _measure(pool: Any, seed: Any, progress: Progress, name: str) -> dict[str, float]:
    source = seed.source()
    spawned: list[Any] = []

    def spawn_one() -> None:
        spawned.append(pool.spawn(source, class_name=seed.class_name))

    out = {"spawn (one instance)": _median_s(spawn_one, BATCH, progress, f"{name}: spawn")}
    handles = spawned[:BATCH]
    out[f"reset_many ({BATCH} instances)"] = _median_s(
        lambda: pool.reset_many([(h, i) for i, h in enumerate(handles)]), REPEATS, progress, f"{name}: reset_many")
    out[f"step_many ({BATCH} instances)"] = _median_s(
        lambda: pool.step_many([(h, "\\boxed{query 1}") for h in handles]), REPEATS, progress, f"{name}: step_many")
    out["call solution (one instance)"] = _median_s(
        lambda: pool.call(handles[0], "solution"), REPEATS, progress, f"{name}: call")
    for h in spawned:
        pool.close_env(h)
    return out


def main() -> None:
    console = Console()
    if importlib.util.find_spec("ray") is None:
        console.print("[yellow]ray is not installed: pip install 'spade-trainer[ray]' to run this benchmark")
        return
    import ray
    from spade_core.plugins import get_plugins
    from spade_sandbox.launcher import SandboxLauncher
    from spade_trainer.distributed import RayEnvPool, RaySettings

    seed = get_plugins().domain("games").seed("polynomial_probe")
    launcher = SandboxLauncher()
    limits = launcher.limits(call_timeout_s=10)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    cpus = 2
    with Progress(console=console, transient=True) as progress:
        with launcher.pool(call_timeout_s=10) as local:
            base = _measure(local, seed, progress, "local")
        t0 = time.perf_counter()
        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
        init_s = time.perf_counter() - t0
        try:
            t0 = time.perf_counter()
            pool = RayEnvPool(RaySettings(num_workers=cpus), limits=limits)
            actors_s = time.perf_counter() - t0
            with pool:
                dist = _measure(pool, seed, progress, "ray")
        finally:
            ray.shutdown()

    table = Table(title=f"Ray executor vs local sandbox pool ({seed.id}, {cpus} actors, medians of {REPEATS})")
    for col in ("operation", "local pool", "Ray pool", "Ray / local"):
        table.add_column(col, justify="left" if col == "operation" else "right")
    for op, local_s in base.items():
        table.add_row(op, f"{local_s * 1e3:.2f} ms", f"{dist[op] * 1e3:.2f} ms", f"{dist[op] / local_s:.1f}x")
    table.add_row("ray.init (local instance, once)", "-", f"{init_s:.1f} s", "-")
    table.add_row(f"start {cpus} sandbox actors (once)", "-", f"{actors_s:.1f} s", "-")
    console.print(table)


if __name__ == "__main__":
    main()
