"""Seeds under a deadline: what running a plugin's seed in a worker process of the trusted
pool (``spade_sandbox.opener.open_env(..., trusted=True)``, what ``gymnasium.make``,
``spade play`` and ``spade eval`` now do) costs against running it in this process (what
they did, with no deadline), and against the sandbox store code runs in.

Run: ``python -m bench.bench_seed_open`` (or ``python -m bench seed_open``). For a few
seeds of each project domain: the time to open one (a warm pool: the zygote already
started; the first open of a process pays the zygote's start once, shown apart) and the
median time of one ``step`` over the replay of ``solution()`` and a few malformed actions,
repeated. Machines are shared and noisy: compare the ratio columns.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table
from spade_core.plugins import get_plugins
from spade_core.sandbox_settings import SandboxSettings
from spade_core.seeds import open_trusted_env
from spade_core.terminal import print_whole

SEEDS = {"games": ("code_breaker", "higher_lower", "island_of_liars"), "tooluse": ("tooluse.bank_ledger",)}
OPENS = 15
ROUNDS = 30
GARBAGE = ("hello", "\\boxed{}", "<answer></answer>")


def _actions(make: Callable[[], Any]) -> list[str]:
    env = make()
    env.reset(seed=0)
    solution = env.unwrapped.solution()
    env.close()
    return [*(solution if isinstance(solution, list) else [str(solution)]), *GARBAGE]


def _step_us(make: Callable[[], Any], actions: list[str]) -> float:
    env = make()
    times = []
    for seed in range(ROUNDS):
        env.reset(seed=seed)
        for action in actions:
            t0 = time.perf_counter()
            _, _, terminated, truncated, _ = env.step(action)
            times.append((time.perf_counter() - t0) * 1e6)
            if terminated or truncated:
                env.reset(seed=seed)
    env.close()
    return statistics.median(times)


def _open_ms(make: Callable[[], Any]) -> float:
    times = []
    for _ in range(OPENS):
        t0 = time.perf_counter()
        env = make()
        times.append((time.perf_counter() - t0) * 1e3)
        env.close()
    return statistics.median(times)


def main() -> None:
    from spade_sandbox.opener import open_env

    console = Console()
    settings = SandboxSettings()
    domains = get_plugins().domains()
    t0 = time.perf_counter()
    first = open_trusted_env(domains["games"].seed("higher_lower").source(), source_name="first", sandbox=settings)
    cold_ms = (time.perf_counter() - t0) * 1e3
    first.close()
    table = Table(title="a seed in this process, in the trusted pool (deadline) and in the sandbox: medians",
                  caption=f"open: {OPENS} opens of a warm pool; step: {ROUNDS} episodes of solution() + {len(GARBAGE)} "
                          f"malformed actions; first trusted open of this process (zygote start) {cold_ms:.0f} ms")
    for col in ("seed", "open in-process ms", "open trusted ms", "step in-process µs", "step trusted µs",
                "step sandbox µs", "trusted / in-process", "sandbox / trusted"):
        table.add_column(col, justify="left" if col == "seed" else "right")
    for domain, names in SEEDS.items():
        dom = domains[domain]
        for name in names:
            seed = dom.seed(name)
            source = seed.source()
            terms = {"class_name": seed.class_name, "max_turns": seed.max_turns, "reward_range": dom.reward_range}

            def local(source: str = source, terms: dict[str, Any] = terms) -> Any:
                return open_trusted_env(source, source_name="seed", in_process=True, **terms)

            def trusted(source: str = source, terms: dict[str, Any] = terms) -> Any:
                return open_trusted_env(source, source_name="seed", sandbox=settings, **terms)

            def sandboxed(source: str = source, terms: dict[str, Any] = terms, allowed: Any = dom.allowed_modules) -> Any:
                return open_env(source, allowed_modules=allowed, sandbox=settings, **terms)

            actions = _actions(local)
            step_local, step_trusted, step_sandbox = (_step_us(m, actions) for m in (local, trusted, sandboxed))
            table.add_row(name, f"{_open_ms(local):.2f}", f"{_open_ms(trusted):.2f}", f"{step_local:.1f}",
                          f"{step_trusted:.1f}", f"{step_sandbox:.1f}", f"{step_trusted / step_local:.1f}x",
                          f"{step_sandbox / step_trusted:.2f}x")
    print_whole(console, table)


if __name__ == "__main__":
    main()
