"""Designer throughput excluding generation: prompt building, extraction, validation (the
real pipeline in the sandbox), hints' leakage check and admission into a real SQLite store.

Generation is replayed (it costs ~0 s and is subtracted anyway), so the numbers are the
designer's own overhead per candidate. Mixes:

* ``model-like``: what the embedded SmolLM2 produces: mostly prose or code without an
  environment class, some code the static check or loading rejects, a few valid games;
* ``all-rejected``: every reply has an environment class that fails the static check;
* ``all-valid``: every reply is a distinct valid game (full pipeline + hint + admission).

Usage: ``python -m bench.bench_designer [--n 40] [--repeats 3]``. Target: >= 10 candidates/s
for the model-like mix.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
LANTERN = (ROOT / "tests" / "designer" / "envs" / "lantern.py").read_text(encoding="utf-8")
TARGET = 10.0
FENCE = "```"


def valid(i: int) -> str:
    """A variant of the lantern game (warm-up only: variants are near-duplicates of one
    another, which the novelty stage rejects)."""
    low, high = 10 + i % 50, 100 + i * 7
    return LANTERN.replace("LanternCodeEnv", f"Lantern{i}Env").replace("10, 99", f"{low}, {high}").replace(
        "from 10 to 99", f"from {low} to {high}"
    )


def distinct_games() -> list[str]:
    """Valid games that differ from one another: the games domain's seed pool (19 games).
    A round of valid candidates uses at most this many, so that each one goes through the
    whole pipeline (hint and admission included) instead of stopping at novelty."""
    from spade_core.plugins import get_plugins

    return [s.source() for s in get_plugins().domain("games").seed_envs]


def reply(kind: str, i: int) -> str:
    if kind == "prose":
        return "Sure! A game where the player guesses numbers. The player wins when they guess right."
    if kind == "no-env":
        return f"{FENCE}python\ndef play(n):\n    return n * {i}\n{FENCE}"
    if kind == "static":
        return f"{FENCE}python\nimport os\n\nclass Shell{i}Env:\n    def reset(self, seed=None):\n        return os.getcwd(), {{}}\n\n    def step(self, action):\n        return '', 0.0, True, False, {{}}\n{FENCE}"
    if kind == "load":
        return f"{FENCE}python\nclass Crash{i}Env:\n    def __init__(self):\n        raise ValueError('not ready {i}')\n\n    def reset(self, seed=None):\n        return '', {{}}\n\n    def step(self, action):\n        return '', 0.0, True, False, {{}}\n{FENCE}"
    games = distinct_games()
    return f"Here it is.\n{FENCE}python\n{games[i % len(games)]}{FENCE}\n"


MIXES = {
    # per 10 candidates, a mix like the SmolLM2 round's outcomes
    "model-like": ["prose", "no-env", "prose", "no-env", "static", "prose", "load", "no-env", "static", "valid"],
    "all-rejected": ["static"],
    "all-valid": ["valid"],
}


def run_round(mix: list[str], n: int, validator) -> tuple[float, float, float, dict]:
    from spade_core.store import EnvStore
    from spade_designer.config import DesignerConfig
    from spade_designer.corpus import PyDocsCorpus
    from spade_designer.designer import Designer
    from spade_designer.llm import ReplayBackend
    from spade_designer.memory import StoreMemory

    outputs = [reply(mix[i % len(mix)], i) for i in range(n)]
    backend = ReplayBackend(rules=[("source code of an environment", "Halve the remaining range with each guess."),
                                   ("Design a new", outputs)])
    with tempfile.TemporaryDirectory() as d:
        store = EnvStore(f"sqlite:///{d}/store.db")
        designer = Designer(backend, store, validator, PyDocsCorpus(), StoreMemory(store),
                            DesignerConfig(repair_attempts=0, document_words=400))
        t0, cpu0 = time.perf_counter(), time.process_time()
        result = designer.design_round("games", "logical_deduction", n, seed=0)
        wall = time.perf_counter() - t0
        cpu = time.process_time() - cpu0
        store.close()
    designer_s = wall - result.timings.get("generation", 0.0)
    return n / designer_s, wall, cpu, result.summary()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_designer")
    parser.add_argument("--n", type=int, default=40, help="candidates per round")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv or [])
    from spade_designer.validation import Validator

    console = Console(width=max(140, Console().width))
    table = Table(title=f"designer throughput excluding generation ({args.n} candidates/round, all-valid: "
                        f"{min(args.n, len(distinct_games()))} distinct games; "
                        f"median of {args.repeats}; target >= {TARGET:.0f}/s)")
    cols = ("mix", "candidates/s", "vs target", "s/round", "caller CPU s/round", "validation s", "designer-own s", "admitted",
            "rejected by stage")
    for col in cols:
        table.add_column(col, justify="left" if col in ("mix", "rejected by stage") else "right")
    with Validator() as validator:
        validator.validate(valid(10_000))  # start the sandbox pool before timing
        validator.validate_many([valid(10_001)])  # and the validator processes of batches
        for name, mix in MIXES.items():
            rates, walls, cpus, summary = [], [], [], {}
            # valid candidates must be distinct games: at most as many as the seed pool holds
            n = min(args.n, len(distinct_games())) if name == "all-valid" else args.n
            for _ in range(args.repeats):
                rate, wall, cpu, summary = run_round(mix, n, validator)
                rates.append(rate)
                walls.append(wall)
                cpus.append(cpu)
            med = statistics.median(rates)
            phases = summary["timings_s"]
            # prompt building (memory + corpus), extraction, hints' leakage probes, admission
            own = sum(v for k, v in phases.items() if k not in ("generation", "validation"))
            table.add_row(name, f"{med:.1f}", f"{med / TARGET:.2f}x", f"{statistics.median(walls):.2f}", f"{statistics.median(cpus):.2f}",
                          f"{phases.get('validation', 0.0):.2f}", f"{own:.2f}",
                          f"{summary['admitted']}/{summary['designed']}",
                          ", ".join(f"{k} {v}" for k, v in summary["rejected_by_stage"].items()) or "-")
    console.print(table)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    console.print(f"[dim]machine load average {load:.1f} on {os.cpu_count()} cores while measuring")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
