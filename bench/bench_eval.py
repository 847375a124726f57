"""Evaluation throughput against the sandbox pool's raw step rate (issue 20).

Run: ``python -m bench.bench_eval`` (or ``python -m bench eval``).

The same sandboxed environment (a ten-turn game, one worker per episode) is played two
ways, alternating, ``ROUNDS`` times:

* **raw**: ``CONCURRENCY`` threads each reset and step their ``SandboxedEnv`` with a fixed
  action until the episode ends: what the pool itself gives;
* **harness**: :func:`spade_eval.harness.evaluate` with the replay backend answering the
  same fixed action (a policy that costs nothing), so what is measured is the harness's
  own work: conversations, one batched ``chat`` per round, stepping on its thread pool,
  results and statistics.

The table gives median episodes/s of each and their ratio: near 1 means the harness is not
the bottleneck, a real policy's generation is.
"""

from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from rich.console import Console
from rich.table import Table

ROUNDS = 3
EPISODES = 160
CONCURRENCY = 16
TURNS = 10
ACTION = "\\boxed{step}"
SOURCE = f'''
class TenTurnEnv:
    def reset(self, seed=None):
        self.t = 0
        return "Say step {TURNS} times.", {{}}

    def step(self, action):
        self.t += 1
        done = self.t >= {TURNS}
        return f"turn {{self.t}}", float(done), done, False, {{}}

    def solution(self):
        return ["\\\\boxed{{step}}"] * {TURNS}
'''


def _raw(pool: object) -> float:
    from spade_sandbox import SandboxedEnv

    def episode(seed: int) -> int:
        env = SandboxedEnv(SOURCE, pool=pool, max_turns=TURNS)  # type: ignore[arg-type]
        try:
            env.reset(seed=seed)
            steps, done = 0, False
            while not done:
                _, _, terminated, truncated, _ = env.step(ACTION)
                steps += 1
                done = terminated or truncated
            return steps
        finally:
            env.close()

    t0 = time.perf_counter()
    with ThreadPoolExecutor(CONCURRENCY) as ex:
        steps = sum(ex.map(episode, range(EPISODES)))
    assert steps == EPISODES * TURNS
    return EPISODES / (time.perf_counter() - t0)


def _harness(pool: object) -> float:
    from spade_core.evaluation import EvalItem
    from spade_designer.llm.replay import ReplayBackend
    from spade_eval.harness import evaluate

    from spade_sandbox import SandboxedEnv

    items = [EvalItem("bench", seed, lambda: SandboxedEnv(SOURCE, pool=pool, max_turns=TURNS), max_turns=TURNS)  # type: ignore[arg-type]
             for seed in range(EPISODES)]
    result = evaluate(ReplayBackend(rules=[(".", ACTION)]), items, concurrency=CONCURRENCY)
    assert result.overall.success_rate == 1.0 and result.env_steps == EPISODES * TURNS, result.overall
    return result.episodes_per_s


def main() -> None:
    from spade_sandbox.launcher import SandboxLauncher

    console = Console()
    raw, harness = [], []
    with SandboxLauncher().pool() as pool:
        _raw(pool)  # warm the zygote and the imports
        for _ in range(ROUNDS):
            raw.append(_raw(pool))
            harness.append(_harness(pool))
    r, h = statistics.median(raw), statistics.median(harness)
    table = Table(title=f"eval throughput: {EPISODES} episodes x {TURNS} turns, {CONCURRENCY} in flight, "
                        f"median of {ROUNDS} alternating rounds", title_justify="left")
    for col in ("way", "episodes/s", "env-steps/s", "min", "max"):
        table.add_column(col, justify="right" if col != "way" else "left")
    for name, values in (("raw pool (threads stepping SandboxedEnv)", raw), ("spade eval harness, zero-cost policy", harness)):
        m = statistics.median(values)
        table.add_row(name, f"{m:.1f}", f"{m * TURNS:.0f}", f"{min(values):.1f}", f"{max(values):.1f}")
    console.print(table)
    console.print(f"harness / raw: {h / r:.2f}x")


if __name__ == "__main__":
    main()
