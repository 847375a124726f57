"""Games seed pool: cost of one episode in-process, through the Gymnasium adapter and in
the sandbox; how far blind guessing gets on each game, and how an observation-only
expert does (the floor and the ceiling of returns).

Run: ``python -m bench.bench_games`` (or ``python -m bench games``). An episode is
``reset(seed)`` plus the replay of ``solution()``; each figure is the median over seeds.
Machines are shared and noisy, so compare the ratio columns rather than absolute times.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table
from spade_core.domains import SeedEnv
from spade_core.env import ReferenceEnvAdapter
from spade_core.source import load_trusted_class
from spade_games.baselines import blind_score
from spade_games.catalog import seed_envs
from spade_games.experts import EXPERTS, play_expert

LOCAL_SEEDS = range(40)
SANDBOX_SEEDS = range(8)
BLIND_EPISODES = 100
EXPERT_EPISODES = 20


def _episode(env: Any, seed: int) -> None:
    env.reset(seed=seed)
    for action in env.solution():
        env.step(action)


def _median_us(make: Callable[[], Any], seeds: range) -> float:
    times = []
    for seed in seeds:
        env = make()
        t0 = time.perf_counter()
        _episode(env, seed)
        times.append((time.perf_counter() - t0) * 1e6)
        env.close()
    return statistics.median(times)


def _sandbox_factory(seed_env: SeedEnv, pool: Any) -> Callable[[], Any]:
    from spade_sandbox import SandboxedEnv

    source = seed_env.source()
    return lambda: SandboxedEnv(source, pool=pool, max_turns=seed_env.max_turns, class_name=seed_env.class_name)


def main() -> None:
    console = Console()
    if not console.is_terminal:  # piped output: keep every column readable
        console = Console(width=max(console.width, 180))
    try:
        from spade_sandbox.launcher import SandboxLauncher

        pool: Any = SandboxLauncher().pool()
    except Exception as exc:  # the sandbox column is optional; say why it is missing
        console.print(f"[yellow]sandbox unavailable ({type(exc).__name__}: {exc}); its columns stay empty")
        pool = None
    table = Table(
        title="games seed pool: cost of a solved episode (median), blind floor, expert ceiling",
        caption="sol = solution steps; blind = commands known, observations ignored; "
        "expert = observations only, no hidden state (median turns)",
    )
    for col in (
        "game",
        "diff",
        "turns",
        "sol",
        "local µs",
        "adapter µs",
        "sandbox µs",
        "adapter/local",
        "sandbox/local",
        "blind win",
        "blind ret",
        "expert win",
        "expert turns",
    ):
        table.add_column(col, justify="left" if col == "game" else "right", no_wrap=True)
    seeds = seed_envs()
    ratios: list[float] = []
    try:
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task("benchmarking games", total=len(seeds))
            for seed_env in seeds:
                cls = load_trusted_class(seed_env.source(), seed_env.class_name)
                local = _median_us(cls, LOCAL_SEEDS)
                adapted = _median_us(
                    lambda cls=cls, turns=seed_env.max_turns: ReferenceEnvAdapter(cls(), max_turns=turns), LOCAL_SEEDS
                )
                sandboxed = None
                if pool is not None:
                    make = _sandbox_factory(seed_env, pool)
                    _median_us(make, range(1))  # first spawn starts the worker: not an episode cost
                    sandboxed = _median_us(make, SANDBOX_SEEDS)
                    ratios.append(sandboxed / local)
                probe = cls()
                probe.reset(seed=0)
                blind = blind_score(seed_env, BLIND_EPISODES)
                expert_cells = ["-", "-"]
                if seed_env.name in EXPERTS:
                    plays = [play_expert(seed_env, seed) for seed in range(EXPERT_EPISODES)]
                    expert_cells = [
                        f"{sum(p.won for p in plays) / len(plays):.2f}",
                        f"{statistics.median(p.turns for p in plays):.0f}",
                    ]
                table.add_row(
                    seed_env.name,
                    f"{seed_env.difficulty:.2f}",
                    str(seed_env.max_turns),
                    str(len(probe.solution())),
                    f"{local:.0f}",
                    f"{adapted:.0f}",
                    "-" if sandboxed is None else f"{sandboxed:.0f}",
                    f"{adapted / local:.2f}x",
                    "-" if sandboxed is None else f"{sandboxed / local:.0f}x",
                    f"{blind.win_rate:.2f}",
                    f"{blind.mean_return:.3f}",
                    *expert_cells,
                )
                progress.advance(task)
    finally:
        if pool is not None:
            pool.close()
    console.print(table)
    if ratios:
        console.print(
            f"median sandbox/local episode ratio: {statistics.median(ratios):.0f}x "
            f"over {len(ratios)} games ({len(SANDBOX_SEEDS)} sandboxed, {len(LOCAL_SEEDS)} local episodes each)"
        )


if __name__ == "__main__":
    main()
