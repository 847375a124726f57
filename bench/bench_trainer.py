"""Trainer benchmarks: rollout-engine overhead per agent turn.

With an instant policy and instant environments, everything measured is the engine's own
work (prompt building, batched tokenisation, action extraction, bookkeeping). Target:
under 1 ms per agent turn across 256 concurrent episodes, so that generation, not our
code, bounds the self-play loop. Run: ``python -m bench.bench_trainer``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
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


def main() -> None:
    console = Console()
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


if __name__ == "__main__":
    main()
