"""A simulation check that regret-driven design tracks the agent's frontier.

Setting: environments have a known difficulty ``d`` in [0, 1]; a synthetic agent's skill
grows over time; the agent wins an unhinted play with probability
``sigmoid((skill - d) / temperature)`` and a hinted play as if its skill were
``skill + hint_boost``. A bandit designer chooses difficulty bins by a softmax over the
running mean reward of each bin; the reward it receives is the strategy under test,
measured from K hinted and K unhinted sampled plays per chosen environment:

* ``regret`` — pure regret; ``blend`` — the released recipes' blend (see :mod:`.rewards`);
* ``solve_rate`` — the unhinted win rate alone; ``random`` — uniform choice.

The agent's *frontier* is the difficulty of greatest expected regret (``skill +
hint_boost / 2``). Tracking error = mean |chosen difficulty - frontier| over the run.
Run ``python -m spade_trainer.curriculum OUT.png`` for the table and the plot.

Design operators (:func:`simulate_operator`): ``write`` is the bin bandit above (every
environment written from scratch at a chosen difficulty); ``edit`` keeps an archive of
measured environments, starting from a seed pool spread over the difficulties, and makes
each new one by editing a parent drawn from the archive's frontier (the best
``frontier_size`` by the strategy's reward, as last measured): the child's difficulty is the
parent's plus a small Gaussian step (``edit_step``); ``mix`` edits with probability
``edit_share`` and writes otherwise. ``python -m spade_trainer.curriculum --operators
OUT.png`` prints their table and plot.
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .regret import regret_from_returns
from .rewards import DesignerRewardSpec, designer_reward

STRATEGIES: tuple[str, ...] = ("regret", "blend", "solve_rate", "random")
OPERATORS: tuple[str, ...] = ("write", "edit", "mix")


@dataclass(frozen=True)
class SimulationConfig:
    steps: int = 200
    envs_per_step: int = 8
    plays: int = 16
    bins: int = 20
    skill_start: float = 0.05
    skill_end: float = 0.75
    hint_boost: float = 0.2
    temperature: float = 0.04
    #: Softmax temperature of the designer over bin values.
    choice_temperature: float = 0.05
    #: Step size of the running mean of each bin's reward (non-stationary target).
    learning_rate: float = 0.3
    #: Chance of a uniformly random bin (keeps every bin's estimate fresh).
    explore: float = 0.1
    # --- the edit operator ---------------------------------------------------------------
    #: Seed environments the archive starts with, spread evenly over [0, 1].
    seed_envs: int = 19
    #: Standard deviation of an edit's difficulty step.
    edit_step: float = 0.05
    #: Parents are drawn uniformly from the best this many archived environments.
    frontier_size: int = 8
    #: The archive keeps the most recent this many environments (seeds included).
    archive_size: int = 200
    #: Share of edits under the ``mix`` operator.
    edit_share: float = 0.5
    #: Replay an edited parent (K + K more plays) so its reward is current; off, a parent
    #: keeps the reward of its own last measurement (same play budget as writing).
    replay_parents: bool = True


@dataclass
class SimulationTrace:
    strategy: str
    skill: list[float] = field(default_factory=list)
    frontier: list[float] = field(default_factory=list)
    chosen_difficulty: list[float] = field(default_factory=list)
    win_rate: list[float] = field(default_factory=list)
    regret: list[float] = field(default_factory=list)

    @property
    def tracking_error(self) -> float:
        pairs = zip(self.chosen_difficulty, self.frontier, strict=True)
        return sum(abs(c - f) for c, f in pairs) / len(self.frontier)

    def correlation_with_skill(self) -> float:
        return _pearson(self.skill, self.chosen_difficulty)


def _pearson(xs: Sequence[float], ys: Sequence[float]) -> float:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sx = math.sqrt(sum((x - mx) ** 2 for x in xs))
    sy = math.sqrt(sum((y - my) ** 2 for y in ys))
    return sxy / (sx * sy) if sx > 0 and sy > 0 else 0.0


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, x))))


def simulate(strategy: str, config: SimulationConfig | None = None, *, seed: int = 0) -> SimulationTrace:
    """Run one strategy; deterministic for a given seed."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    cfg = config or SimulationConfig()
    rng = random.Random(seed)
    values = [0.0] * cfg.bins
    trace = SimulationTrace(strategy)
    spec = DesignerRewardSpec()
    for step in range(cfg.steps):
        skill = cfg.skill_start + (cfg.skill_end - cfg.skill_start) * step / max(1, cfg.steps - 1)
        chosen, wins, regrets = [], [], []
        for _ in range(cfg.envs_per_step):
            if strategy == "random" or rng.random() < cfg.explore:
                b = rng.randrange(cfg.bins)
            else:
                top = max(values)
                weights = [math.exp((v - top) / cfg.choice_temperature) for v in values]
                b = rng.choices(range(cfg.bins), weights)[0]
            d = (b + rng.random()) / cfg.bins
            regret, win = _measure(rng, cfg, skill, d)
            reward = _reward(strategy, regret, win, spec)
            values[b] += cfg.learning_rate * (reward - values[b])
            chosen.append(d)
            wins.append(win)
            regrets.append(regret)
        _record_step(trace, cfg, skill, chosen, wins, regrets)
    return trace


def _measure(rng: random.Random, cfg: SimulationConfig, skill: float, d: float) -> tuple[float, float]:
    """``(regret, unhinted win rate)`` of one environment of difficulty ``d`` from K + K plays."""
    p_plain = _sigmoid((skill - d) / cfg.temperature)
    p_hint = _sigmoid((skill + cfg.hint_boost - d) / cfg.temperature)
    unhinted = [1.0 if rng.random() < p_plain else 0.0 for _ in range(cfg.plays)]
    hinted = [1.0 if rng.random() < p_hint else 0.0 for _ in range(cfg.plays)]
    return regret_from_returns(hinted, unhinted), sum(unhinted) / len(unhinted)


def _record_step(trace: SimulationTrace, cfg: SimulationConfig, skill: float, chosen: list[float],
                 wins: list[float], regrets: list[float]) -> None:
    """One step of ``trace``: the agent's skill, the frontier, and the means of what was designed."""
    trace.skill.append(skill)
    trace.frontier.append(min(1.0, skill + cfg.hint_boost / 2))
    trace.chosen_difficulty.append(sum(chosen) / len(chosen))
    trace.win_rate.append(sum(wins) / len(wins))
    trace.regret.append(sum(regrets) / len(regrets))


def _reward(strategy: str, regret: float, win: float, spec: DesignerRewardSpec) -> float:
    if strategy == "regret":
        return regret
    if strategy == "blend":
        return designer_reward(regret, win, spec)
    if strategy == "solve_rate":
        return win
    return 0.0


def simulate_operator(operator: str, strategy: str = "blend", config: SimulationConfig | None = None, *,
                      seed: int = 0) -> SimulationTrace:
    """Run one design operator (``write``, ``edit`` or ``mix``) under a reward ``strategy``;
    deterministic for a given seed. ``write`` is :func:`simulate` itself."""
    if operator not in OPERATORS:
        raise ValueError(f"unknown operator {operator!r}; choose one of {', '.join(OPERATORS)}")
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    cfg = config or SimulationConfig()
    if operator == "write":
        trace = simulate(strategy, cfg, seed=seed)
        trace.strategy = f"write/{strategy}"
        return trace
    rng = random.Random(seed)
    spec = DesignerRewardSpec()
    values = [0.0] * cfg.bins
    # (difficulty, last measured reward): the seed pool, not measured yet (reward 0)
    archive: list[list[float]] = [[(i + 0.5) / cfg.seed_envs, 0.0] for i in range(cfg.seed_envs)]
    trace = SimulationTrace(f"{operator}/{strategy}")
    for step in range(cfg.steps):
        skill = cfg.skill_start + (cfg.skill_end - cfg.skill_start) * step / max(1, cfg.steps - 1)
        # the archive is re-measured by this step's plays only where it is played: here the
        # parents' rewards are those of their last measurement, as the store keeps them
        chosen, wins, regrets = [], [], []
        for _ in range(cfg.envs_per_step):
            edit = operator == "edit" or rng.random() < cfg.edit_share
            if edit:
                if strategy == "random":
                    parent = rng.choice(archive)
                else:
                    best = sorted(archive, key=lambda e: -e[1])[: cfg.frontier_size]
                    parent = rng.choice(best)
                d = min(1.0, max(0.0, parent[0] + rng.gauss(0.0, cfg.edit_step)))
                b = min(cfg.bins - 1, int(d * cfg.bins))
            else:
                if strategy == "random" or rng.random() < cfg.explore:
                    b = rng.randrange(cfg.bins)
                else:
                    top = max(values)
                    weights = [math.exp((v - top) / cfg.choice_temperature) for v in values]
                    b = rng.choices(range(cfg.bins), weights)[0]
                d = (b + rng.random()) / cfg.bins
            regret, win = _measure(rng, cfg, skill, d)
            reward = _reward(strategy, regret, win, spec)
            values[b] += cfg.learning_rate * (reward - values[b])
            if edit and cfg.replay_parents:
                parent[1] = _reward(strategy, *_measure(rng, cfg, skill, parent[0]), spec)  # the parent is replayed
            archive.append([d, reward])
            if len(archive) > cfg.archive_size:
                archive.pop(0)
            chosen.append(d)
            wins.append(win)
            regrets.append(regret)
        _record_step(trace, cfg, skill, chosen, wins, regrets)
    return trace


def early_tracking_error(trace: SimulationTrace, fraction: float = 0.2) -> float:
    """Tracking error over the first ``fraction`` of the run (how fast the frontier is found)."""
    n = max(1, int(len(trace.frontier) * fraction))
    return sum(abs(c - f) for c, f in zip(trace.chosen_difficulty[:n], trace.frontier[:n], strict=True)) / n


def plot(traces: Sequence[SimulationTrace], path: str | Path) -> Path:
    """Chosen difficulty of each strategy against the agent's frontier, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    steps = range(len(traces[0].frontier))
    ax.plot(steps, traces[0].frontier, "k--", lw=2, label="agent frontier")
    for t in traces:
        ax.plot(steps, t.chosen_difficulty, lw=1.2, label=f"{t.strategy} (err {t.tracking_error:.3f})")
        ax2.plot(steps, t.regret, lw=1.2, label=t.strategy)
    ax.set(xlabel="step", ylabel="difficulty", title="Chosen difficulty vs frontier")
    ax2.set(xlabel="step", ylabel="mean measured regret", title="Regret of chosen environments")
    ax.legend(fontsize=8)
    ax2.legend(fontsize=8)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "--operators":
        operator_table(args[1:])
        return
    traces = [simulate(s) for s in STRATEGIES]
    table = Table(title="Curriculum simulation: does selection track the agent's frontier?")
    for col in ("strategy", "tracking error", "corr(difficulty, skill)", "mean regret", "mean win rate"):
        table.add_column(col, justify="right")
    for t in traces:
        table.add_row(
            t.strategy,
            f"{t.tracking_error:.3f}",
            f"{t.correlation_with_skill():.2f}",
            f"{sum(t.regret) / len(t.regret):.3f}",
            f"{sum(t.win_rate) / len(t.win_rate):.3f}",
        )
    Console().print(table)
    if args:
        print(f"plot: {plot(traces, args[0])}")


def operator_table(args: Sequence[str], seeds: Sequence[int] = (0, 1, 2)) -> None:
    """Writing vs editing vs both, under the regret and blend rewards (editing with and
    without replaying the parent): means over ``seeds``."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Design operators: writing from scratch vs editing a frontier parent (means of 3 seeds)")
    for col in ("operator/reward", "tracking error", "first 20% of steps", "corr(difficulty, skill)",
                "mean regret", "mean win rate"):
        table.add_column(col, justify="right")
    shown: list[SimulationTrace] = []
    stale = SimulationConfig(replay_parents=False)
    rows = [(op, None) for op in OPERATORS] + [("edit", stale), ("mix", stale)]
    for strategy in ("regret", "blend"):
        for op, cfg in rows:
            runs = [simulate_operator(op, strategy, cfg, seed=s) for s in seeds]
            label = runs[0].strategy + (" (parents not replayed)" if cfg is not None else "")
            table.add_row(
                label,
                f"{sum(t.tracking_error for t in runs) / len(runs):.3f}",
                f"{sum(early_tracking_error(t) for t in runs) / len(runs):.3f}",
                f"{sum(t.correlation_with_skill() for t in runs) / len(runs):.2f}",
                f"{sum(sum(t.regret) / len(t.regret) for t in runs) / len(runs):.3f}",
                f"{sum(sum(t.win_rate) / len(t.win_rate) for t in runs) / len(runs):.3f}",
            )
            if strategy == "regret" and cfg is None:
                shown.append(runs[0])
    Console().print(table)
    if args:
        print(f"plot: {plot(shown, args[0])}")


if __name__ == "__main__":
    main()
