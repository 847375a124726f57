"""Rewards of both roles: episode returns, designer reward variants, per-role advantages.

Everything here is a pure function of numbers so it can be property-tested exhaustively;
plugin shaping (the ``spade_*_reward_terms`` hooks) is applied by :mod:`.shaping`.

Conventions (REFERENCE.md):

* episode return = last-step reward clipped to [-1, 1] if the episode terminated, else 0;
  a step that hung past its deadline ends the episode with :data:`HUNG_STEP_PENALTY`;
* designer reward *blend* = ``0.4 * clip(regret / 0.15, 0, 1) + 0.6 * plateau(win_rate)``,
  plateau = 1 on [0.4, 0.6], falling linearly to 0 at 0.15 and 0.85; the *plateau*
  variant is ``plateau(win_rate)`` alone (in [0, 1], the blend's range), with no regret term;
* designer advantages are centred per skill (no std division); agent advantages are
  episode returns normalised per environment (GRPO groups);
* shaping terms (plugins) only break ties: :func:`bound_shaping` scales them below the
  smallest gap between distinct base rewards, so they never reverse an ordering that regret
  or return set.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from spade_core.returns import HUNG_STEP_PENALTY
from spade_core.returns import episode_return as _core_return

from .errors import RewardError


def _finite(name: str, value: float) -> float:
    v = float(value)
    if not math.isfinite(v):
        raise RewardError(f"{name} must be finite, got {value!r}")
    return v


def episode_return(
    last_reward: float | None, terminated: bool, *, hung: bool = False, hang_penalty: float = HUNG_STEP_PENALTY
) -> float:
    """Return of one episode: :func:`spade_core.returns.episode_return` (the one rule, which
    the TRL adapter and evaluation apply too), a non-finite value a :class:`RewardError`."""
    return _core_return(last_reward, terminated, hung=hung, hang_penalty=hang_penalty, error=RewardError)


@dataclass(frozen=True)
class Plateau:
    """A trapezoid on [0, 1]: 0 up to ``low``, rising to 1 on [``band_low``, ``band_high``], 0 from ``high``."""

    low: float = 0.15
    band_low: float = 0.4
    band_high: float = 0.6
    high: float = 0.85

    def __post_init__(self) -> None:
        if not 0.0 <= self.low < self.band_low <= self.band_high < self.high <= 1.0:
            raise RewardError(
                "plateau needs 0 <= low < band_low <= band_high < high <= 1; got "
                f"{self.low}, {self.band_low}, {self.band_high}, {self.high}"
            )

    def __call__(self, win_rate: float) -> float:
        p = _check_rate("win_rate", win_rate)
        if p <= self.low or p >= self.high:
            return 0.0
        if p < self.band_low:
            return (p - self.low) / (self.band_low - self.low)
        if p > self.band_high:
            return (self.high - p) / (self.high - self.band_high)
        return 1.0


def _check_rate(name: str, value: float) -> float:
    v = _finite(name, value)
    if not 0.0 <= v <= 1.0:
        raise RewardError(f"{name} must lie in [0, 1], got {value!r}")
    return v


def plateau(win_rate: float) -> float:
    """The released recipes' plateau of the win rate (see :class:`Plateau`)."""
    return _DEFAULT_PLATEAU(win_rate)


_DEFAULT_PLATEAU = Plateau()


def learning_potential(win_rate: float) -> float:
    """``4 p (1 - p)``: 1 at a 50 % win rate, 0 for environments always or never solved.

    The learnability idea of Absolute Zero in a smooth form; it needs no hinted plays.
    """
    p = _check_rate("win_rate", win_rate)
    return 4.0 * p * (1.0 - p)


class DesignerRewardVariant(StrEnum):
    """How a designed environment's measured regret and win rate become a reward."""

    regret = "regret"
    blend = "blend"
    learning_potential = "learning_potential"
    #: ``plateau(win_rate)`` alone: no regret term (the paper's solve-rate-only ablation
    #: when the win rate read is the solve rate, ``reward.win_rate = "solve_rate"``).
    plateau = "plateau"


@dataclass(frozen=True)
class DesignerRewardSpec:
    """Parameters of the designer reward (defaults: the released recipes' blend)."""

    variant: DesignerRewardVariant = DesignerRewardVariant.blend
    regret_scale: float = 0.15
    regret_weight: float = 0.4
    plateau_weight: float = 0.6
    plateau: Plateau = Plateau()
    #: Base reward of a candidate that failed validation (shaping terms come on top).
    invalid_reward: float = 0.0

    def __post_init__(self) -> None:
        if not self.regret_scale > 0:
            raise RewardError(f"regret_scale must be > 0, got {self.regret_scale}")
        for name in ("regret_weight", "plateau_weight", "invalid_reward"):
            _finite(name, getattr(self, name))


def designer_reward(regret: float | None, win_rate: float | None, spec: DesignerRewardSpec | None = None) -> float:
    """Base reward of one designed environment; ``regret``/``win_rate`` ``None`` means it was invalid."""
    spec = spec or DesignerRewardSpec()
    if regret is None or win_rate is None:
        return spec.invalid_reward
    r = _finite("regret", regret)
    if r < 0:
        raise RewardError(f"regret is floored at 0 and cannot be negative, got {regret!r}")
    p = _check_rate("win_rate", win_rate)
    if spec.variant is DesignerRewardVariant.regret:
        return r
    if spec.variant is DesignerRewardVariant.learning_potential:
        return learning_potential(p)
    if spec.variant is DesignerRewardVariant.plateau:
        return spec.plateau(p)
    return spec.regret_weight * min(1.0, r / spec.regret_scale) + spec.plateau_weight * spec.plateau(p)


def _grouped(values: Sequence[float], groups: Sequence[Hashable]) -> dict[Hashable, list[int]]:
    if len(values) != len(groups):
        raise RewardError(f"{len(values)} values but {len(groups)} group keys")
    members: dict[Hashable, list[int]] = defaultdict(list)
    for i, (v, g) in enumerate(zip(values, groups, strict=True)):
        _finite(f"value[{i}]", v)
        members[g].append(i)
    return members


def centre_by_group(values: Sequence[float], groups: Sequence[Hashable]) -> list[float]:
    """Subtract each group's mean (designer advantages, grouped by skill; no std division)."""
    out = [0.0] * len(values)
    for idx in _grouped(values, groups).values():
        mean = math.fsum(values[i] for i in idx) / len(idx)
        for i in idx:
            out[i] = float(values[i]) - mean
    return out


def normalise_by_group(
    values: Sequence[float], groups: Sequence[Hashable], *, scale: bool = True, eps: float = 1e-4
) -> list[float]:
    """GRPO advantages: centre per group and (``scale``) divide by the group's std + ``eps``.

    A group whose members all scored the same carries no signal and gets zeros.
    """
    out = [0.0] * len(values)
    for idx in _grouped(values, groups).values():
        xs = [float(values[i]) for i in idx]
        mean = math.fsum(xs) / len(xs)
        std = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / len(xs))
        for i, x in zip(idx, xs, strict=True):
            centred = x - mean
            if scale:
                # equal scores: no signal (and float noise must not become a large advantage)
                out[i] = 0.0 if std <= eps * 1e-3 else centred / (std + eps)
            else:
                out[i] = centred
    return out


def bound_shaping(base: Sequence[float], shaping: Sequence[float]) -> list[float]:
    """``base + lam * shaping`` with the largest ``lam <= 1`` that cannot reverse an ordering
    of ``base``: shaping's spread is held to half the smallest gap between distinct base
    values, so for ``base[i] > base[j]`` the result keeps ``i`` above ``j``. When every base
    value ties, shaping keeps its full size (it is then the only signal)."""
    if len(base) != len(shaping):
        raise RewardError(f"{len(base)} base rewards but {len(shaping)} shaping values")
    b = [_finite(f"base[{i}]", v) for i, v in enumerate(base)]
    s = [_finite(f"shaping[{i}]", v) for i, v in enumerate(shaping)]
    if not b:
        return []
    spread = max(s) - min(s)
    distinct = sorted(set(b))
    lam = 1.0
    if spread > 0 and len(distinct) > 1:
        gap = min(y - x for x, y in zip(distinct, distinct[1:], strict=False))
        lam = min(1.0, 0.5 * gap / spread)
    return [x + lam * y for x, y in zip(b, s, strict=True)]
