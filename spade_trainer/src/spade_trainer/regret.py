"""Regret: how much a privileged hint helps the agent on one environment.

``regret = mean(hinted returns) - mean(unhinted returns)``, floored at 0, measured from
K hinted and K unhinted plays of the *same* policy snapshot (all 2K plays of all
environments run in one batched rollout, so they see the same weights).

As in the reference recipe, plays that failed (the environment raised) or hung (a step
past the sandbox deadline) are the environment's fault, not the agent's: they are dropped
from the means and counted apart (:attr:`RegretEstimate.failed`, :attr:`RegretEstimate.hung`);
the loop retires an environment that hung. The win rate is the mean unhinted return
(clipped to [0, 1]), the reference's "mean return over the regeneration window" (one
iteration here); the share of full wins is :attr:`RegretEstimate.solve_rate`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from spade_core.metadata import StatsSnapshot
from spade_core.returns import HELD_OUT_SEED_BASE, is_win

from .errors import RewardError
from .rollout import Episode, EpisodeSpec, PlayableEnv, RolloutEngine


def _mean(name: str, xs: Sequence[float]) -> float:
    if not xs:
        raise RewardError(f"{name} is empty: regret needs at least one play of each kind")
    for x in xs:
        if not math.isfinite(x) or not -1.0 <= x <= 1.0:
            raise RewardError(f"{name} holds {x!r}; episode returns lie in [-1, 1]")
    return math.fsum(xs) / len(xs)


def regret_from_returns(hinted: Sequence[float], unhinted: Sequence[float]) -> float:
    """``max(0, mean(hinted) - mean(unhinted))``."""
    return max(0.0, _mean("hinted returns", hinted) - _mean("unhinted returns", unhinted))


@dataclass(frozen=True)
class RegretEstimate:
    """Returns of one environment's usable hinted and unhinted plays, and what follows.

    ``failed`` / ``hung`` count the plays (of either kind) left out of the returns because
    the environment raised or hung. An estimate with no usable play of one kind is not
    :attr:`measured`: it has no regret and no win rate.
    """

    env_id: str
    hinted_returns: tuple[float, ...]
    unhinted_returns: tuple[float, ...]
    failed: int = 0
    hung: int = 0

    @property
    def measured(self) -> bool:
        return bool(self.hinted_returns) and bool(self.unhinted_returns)

    @property
    def regret(self) -> float:
        return regret_from_returns(self.hinted_returns, self.unhinted_returns)

    @property
    def mean_hinted(self) -> float:
        return _mean("hinted returns", self.hinted_returns)

    @property
    def mean_unhinted(self) -> float:
        return _mean("unhinted returns", self.unhinted_returns)

    @property
    def win_rate(self) -> float:
        """Mean unhinted return, clipped to [0, 1]: the agent's own ability here (the
        reference's win rate; rewards are partial progress, 1.0 = success)."""
        return max(0.0, min(1.0, self.mean_unhinted))

    @property
    def solve_rate(self) -> float:
        """Share of usable *unhinted* plays won outright (return 1)."""
        if not self.unhinted_returns:
            raise RewardError("unhinted returns is empty: no usable unhinted play")
        return sum(is_win(r) for r in self.unhinted_returns) / len(self.unhinted_returns)

    @property
    def hinted_win_rate(self) -> float:
        """Mean hinted return, clipped to [0, 1]."""
        return max(0.0, min(1.0, self.mean_hinted))

    @property
    def played(self) -> bool:
        """At least one usable unhinted play: a win rate and solve rate exist."""
        return bool(self.unhinted_returns)

    def unhinted_stats(self, policy_snapshot: str) -> StatsSnapshot:
        """The store record of unhinted plays only (no regret: nothing hinted was played)."""
        return StatsSnapshot(
            policy_snapshot=policy_snapshot,
            samples=len(self.unhinted_returns),
            win_rate=self.win_rate,
            mean_return_unhinted=max(-1.0, min(1.0, self.mean_unhinted)),
        )

    def stats(self, policy_snapshot: str) -> StatsSnapshot:
        """The store record of this measurement (usable plays only)."""
        return StatsSnapshot(
            policy_snapshot=policy_snapshot,
            samples=len(self.hinted_returns) + len(self.unhinted_returns),
            win_rate=self.win_rate,
            regret=self.regret,
            mean_return_hinted=max(-1.0, min(1.0, self.mean_hinted)),
            mean_return_unhinted=max(-1.0, min(1.0, self.mean_unhinted)),
        )


@dataclass
class RegretMeasurement:
    """Everything one estimation produced: per-environment estimates and every episode."""

    estimates: list[RegretEstimate]
    episodes: list[Episode]

    def unhinted(self) -> list[Episode]:
        return [e for e in self.episodes if not e.spec.hinted]

    def hinted(self) -> list[Episode]:
        return [e for e in self.episodes if e.spec.hinted]


class RegretEstimator:
    """Plays each environment K times with its hint and K times without, in one rollout."""

    def __init__(self, engine: RolloutEngine, k: int = 16) -> None:
        if k < 1:
            raise RewardError(f"K (plays per condition) must be >= 1, got {k}")
        self.engine = engine
        self.k = k

    def plan(self, envs: Sequence[PlayableEnv], *, seed: int = 0, hinted: bool = True,
             k: int | None = None) -> list[EpisodeSpec]:
        """The episodes to play: for each environment K unhinted then K hinted, seeds shared
        pairwise so hinted and unhinted plays face the same instances. ``hinted=False``
        plays the K unhinted only (no hint needed, no regret measured: a fixed pool).
        Instance seeds stay below :data:`~spade_core.returns.HELD_OUT_SEED_BASE`: the
        instances from there up are held out for evaluation (:mod:`.learning`). ``k``
        overrides the estimator's K for this call."""
        k = self.k if k is None else k
        if k < 1:
            raise RewardError(f"K (plays per condition) must be >= 1, got {k}")
        specs: list[EpisodeSpec] = []
        for n, env in enumerate(envs):
            if hinted and not env.hint:
                raise RewardError(f"environment {env.env_id!r} has no hint; regret needs one")
            seeds = [(seed * 7919 + n * k + j) % HELD_OUT_SEED_BASE for j in range(k)]
            specs.extend(EpisodeSpec(env, False, s) for s in seeds)
            if hinted:
                specs.extend(EpisodeSpec(env, True, s) for s in seeds)
        return specs

    @staticmethod
    def summarise(envs: Sequence[PlayableEnv], episodes: Sequence[Episode]) -> list[RegretEstimate]:
        """Group played episodes into one estimate per environment (in ``envs`` order);
        failed and hung plays are counted, not averaged."""
        out = []
        for env in envs:
            mine = [e for e in episodes if e.spec.env.env_id == env.env_id]
            usable = [e for e in mine if e.usable]
            out.append(
                RegretEstimate(
                    env.env_id,
                    tuple(e.episode_return for e in usable if e.spec.hinted),
                    tuple(e.episode_return for e in usable if not e.spec.hinted),
                    failed=sum(not e.usable and not e.hung for e in mine),
                    hung=sum(e.hung for e in mine),
                )
            )
        return out

    def measure(self, envs: Sequence[PlayableEnv], *, seed: int = 0, hinted: bool = True,
                k: int | None = None) -> RegretMeasurement:
        """Play and summarise (``k`` plays of each kind per environment, default K); with
        ``hinted=False`` the estimates hold unhinted returns only (not
        :attr:`~RegretEstimate.measured`: no regret, but a win rate from
        :meth:`RegretEstimate.unhinted_stats`)."""
        if len({e.env_id for e in envs}) != len(envs):
            raise RewardError("environment ids must be unique within one regret measurement")
        episodes = self.engine.run(self.plan(envs, seed=seed, hinted=hinted, k=k), seed=seed)
        return RegretMeasurement(self.summarise(envs, episodes), episodes)
