"""Trainer benchmarks: rollout-engine overhead per agent turn; torch threads of the policy.

With an instant policy and instant environments, everything measured is the engine's own
work (prompt building, batched tokenisation, action extraction, bookkeeping). Target:
under 1 ms per agent turn across 256 concurrent episodes, so that generation, not our
code, bounds the self-play loop.

The third table runs the tiny self-play config (2-layer model, real designer, sandbox, store
and TRL steps; 2 iterations) under ``accelerate launch`` with one process (``cpu.yaml``) and
with two (``cpu_ddp.yaml``, DDP over gloo), wall and CPU time of the whole launch and the
samples that each update averages over: what a second process costs and adds here.

The second table times the embedded SmolLM2 policy (a 400-token forward pass and a short
greedy generation) with 1 and with 2 torch threads in the same run, wall and CPU time, with
the load average: the measurement behind ``model.threads = "auto"`` in the quickstart preset.
Run: ``python -m bench.bench_trainer [engine] [threads] [launch]`` (default: all three).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from spade_trainer.inprocess import TrustedEnvPool
from spade_trainer.policy import InstantPolicy
from spade_trainer.rollout import EpisodeSpec, PlayableEnv, RolloutEngine, TokenBudget
from spade_trainer.tiny import build_tiny_tokenizer

TURNS = 10
REPEATS = 5
TARGET_MS = 1.0

_GUESS = '''
class CountEnv:
    def reset(self, seed=None):
        self.n = 0
        return "Count to ten. You are at 0.", {}

    def step(self, action):
        self.n += 1
        done = self.n >= 10
        return "You are at %d." % self.n, (1.0 if done else 0.0), done, False, {}
'''


class InstantEnvs:
    """Benchmark double: environments that answer immediately (no Python env code at all)."""

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.count: dict[int, int] = {}
        self._next = 0

    def spawn(self, source: str, *, allowed_modules: Any = (), class_name: str | None = None) -> int:
        self._next += 1
        self.count[self._next] = 0
        return self._next

    def reset_many(self, items: Sequence[tuple[int, int | None]]) -> list[Any]:
        return [("You are in a room with three doors. Which one do you open?", {}) for _ in items]

    def step_many(self, items: Sequence[tuple[int, str]]) -> list[Any]:
        out = []
        for h, _ in items:
            self.count[h] += 1
            done = self.count[h] >= self.turns
            out.append(("The door creaks open; another room.", 1.0 if done else 0.0, done, False, {}))
        return out

    def call(self, handle: int, method: str) -> Any:
        return []

    def close_env(self, handle: int) -> None:
        self.count.pop(handle, None)


def _measure(backend_factory: Any, tokenizer: Any, episodes: int, source: str) -> tuple[float, float]:
    """Median ms per agent turn: (all time, engine-only time)."""
    action = tokenizer("I open the middle door. \\boxed{open middle}", add_special_tokens=False)["input_ids"]
    policy = InstantPolicy(action + [tokenizer.eos_token_id])
    env = PlayableEnv("bench-v1", source, "games", max_turns=TURNS)
    totals, engine_only = [], []
    for r in range(REPEATS):
        engine = RolloutEngine(backend_factory(), policy, tokenizer, budget=TokenBudget(per_turn=64, per_episode=8192))
        t0 = time.perf_counter()
        eps = engine.run([EpisodeSpec(env, False, i) for i in range(episodes)], seed=r)
        elapsed = time.perf_counter() - t0
        turns = sum(e.turns for e in eps)
        assert turns == episodes * TURNS, f"expected {episodes * TURNS} turns, played {turns}"
        totals.append(1000 * elapsed / turns)
        engine_only.append(1000 * engine.last_stats.engine_s / turns)
    return statistics.median(totals), statistics.median(engine_only)


def main(tables: Sequence[str] = ()) -> None:
    """Print the named tables (``engine``, ``threads``, ``launch``; default all)."""
    console = Console()
    unknown = set(tables) - {"engine", "threads", "launch"}
    if unknown:
        raise SystemExit(f"unknown table(s) {sorted(unknown)}: choose from engine, threads, launch")
    if not tables or "engine" in tables:
        engine_table(console)
    if not tables or "threads" in tables:
        threads_table(console)
    if not tables or "launch" in tables:
        launch_table(console)


def engine_table(console: Console) -> None:
    """Rollout-engine overhead per agent turn (see module docstring)."""
    tokenizer = build_tiny_tokenizer()
    table = Table(title=f"Rollout engine overhead per agent turn (instant policy, {TURNS} turns/episode, "
                  f"median of {REPEATS})")
    for col in ("episodes", "environments", "ms/turn (all)", "ms/turn (engine only)", f"vs {TARGET_MS} ms target"):
        table.add_column(col, justify="right")
    for episodes in (16, 64, 256):
        for label, factory, source in (
            ("instant", lambda: InstantEnvs(TURNS), ""),
            ("in-process env code", TrustedEnvPool, _GUESS),
        ):
            total, engine = _measure(factory, tokenizer, episodes, source)
            table.add_row(str(episodes), label, f"{total:.3f}", f"{engine:.3f}", f"{total / TARGET_MS:.2f}x")
    console.print(table)


def _timed(fn: Any, repeats: int) -> tuple[float, float]:
    """Median (wall s, CPU s of this process) of ``repeats`` calls."""
    walls, cpus = [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus)


def threads_table(console: Console, repeats: int = 3) -> None:
    """Embedded policy with 1 vs 2 torch threads (see module docstring)."""
    import os

    import torch
    from spade_trainer.config import ModelSettings
    from spade_trainer.models import load_policy
    from spade_trainer.policy import Sampling, TransformersPolicy

    model, tok = load_policy(ModelSettings())
    model.eval()
    policy = TransformersPolicy(model, tok)
    prompt = torch.randint(100, 40_000, (1, 400), generator=torch.Generator().manual_seed(0))
    before = torch.get_num_threads()
    load = os.getloadavg()
    rows = []
    with torch.no_grad():
        for threads in (1, 2):
            torch.set_num_threads(threads)
            fwd = _timed(lambda: model(prompt), repeats)
            gen = _timed(lambda: policy.generate([prompt[0].tolist()], max_new_tokens=16,
                                                 sampling=Sampling(0.0, 1.0), seed=0), repeats)
            rows.append((threads, fwd, gen))
    torch.set_num_threads(before)
    load_after = os.getloadavg()
    table = Table(title=f"Embedded SmolLM2-135M on CPU, 1 vs 2 torch threads (median of {repeats}; "
                  f"load average {load[0]:.1f} -> {load_after[0]:.1f} on {os.cpu_count()} cores)")
    for col in ("threads", "forward 400 tok wall s", "CPU s", "generate 16 tok wall s", "CPU s",
                "wall vs 1 thread", "CPU vs 1 thread"):
        table.add_column(col, justify="right")
    base = rows[0]
    for threads, fwd, gen in rows:
        table.add_row(str(threads), f"{fwd[0]:.2f}", f"{fwd[1]:.2f}", f"{gen[0]:.2f}", f"{gen[1]:.2f}",
                      f"{(fwd[0] + gen[0]) / (base[1][0] + base[2][0]):.2f}x",
                      f"{(fwd[1] + gen[1]) / (base[1][1] + base[2][1]):.2f}x")
    console.print(table)


def _launch_once(processes: int, folder: Path) -> tuple[float, float, int]:
    """One ``accelerate launch`` of the tiny self-play config: (wall s, CPU s of the launch and
    all its processes, samples per update summed over ranks in the last iteration)."""
    import json
    import os
    import resource
    import socket
    import subprocess
    import sys

    configs = Path(__file__).resolve().parents[1] / "configs" / "accelerate"
    config = configs / ("cpu.yaml" if processes == 1 else "cpu_ddp.yaml")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "SPADE_HOME": str(folder / "home"), "TRL_EXPERIMENTAL_SILENCE": "1", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(config),
           "--num_processes", str(processes), "--main_process_port", str(port),
           "-m", "spade_trainer", "--preset", "tiny", "--run-dir", str(folder / "run"), "--iterations", "2"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"launch of {processes} process(es) failed:\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    samples = 0
    for rank in range(processes):
        metrics = folder / "run" / (f"rank-{rank}" if rank else "") / "metrics.jsonl"
        last = json.loads(metrics.read_text().splitlines()[-1])
        samples += int(last["samples"]["samples"])
    return wall, cpu, samples


def launch_table(console: Console, repeats: int = 3) -> None:
    """Tiny self-play under accelerate, 1 vs 2 CPU processes (see module docstring)."""
    import os
    import tempfile

    load = os.getloadavg()
    rows = []
    for processes in (1, 2):
        runs = []
        for _ in range(repeats):
            with tempfile.TemporaryDirectory(prefix="bench-launch-") as d:
                runs.append(_launch_once(processes, Path(d)))
        rows.append((processes, statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs),
                     runs[0][2]))
    load_after = os.getloadavg()
    table = Table(title=f"Tiny self-play (2 iterations, real designer) under accelerate launch on CPU, median of "
                  f"{repeats} (load average {load[0]:.1f} -> {load_after[0]:.1f} on {os.cpu_count()} cores)")
    for col in ("processes", "wall s", "CPU s", "samples per update", "wall vs 1", "CPU vs 1",
                "CPU per sample vs 1"):
        table.add_column(col, justify="right")
    _, wall1, cpu1, samples1 = rows[0]
    for processes, wall, cpu, samples in rows:
        table.add_row(str(processes), f"{wall:.1f}", f"{cpu:.1f}", str(samples), f"{wall / wall1:.2f}x",
                      f"{cpu / cpu1:.2f}x", f"{(cpu / samples) / (cpu1 / samples1):.2f}x")
    console.print(table)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
