"""Training samples of both roles, and their per-role advantages.

A :class:`PolicySample` is one sequence the shared policy produced: a designer sample is
one design turn (the first design or a repair) and the environment code it wrote; an agent
sample is one episode's multi-turn trajectory (environment tokens marked 0 in
``env_mask``). Advantages are computed per role, as the reference recipe does:

* designer: rewards centred per skill (no std division), times the designer reward scale
  (``env_reward_scale``). Valid designs are centred among the valid ones of their skill, so
  an invalid candidate (trained only under the CPU shaping option) never moves a valid
  design's advantage; invalid candidates are measured against the valid designs' mean
  (among themselves when their skill has no valid design) and then placed at or below the
  lowest valid advantage of their skill, so none outranks a valid design;
* agent: returns normalised per environment (GRPO groups), the std taken over the returns
  themselves: shaping that only separates tied returns yields advantages of the shaping's
  own size, not unit-size ones;
* shaping terms of either role only break ties (:func:`~.rewards.bound_shaping`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from .errors import TrainerError
from .rewards import bound_shaping

#: GRPO's std floor (TRL's default epsilon); a group whose returns tie has std 0.
_EPS = 1e-4


class Role(StrEnum):
    designer = "designer"
    agent = "agent"


@dataclass(frozen=True)
class PolicySample:
    """One sampled sequence with its role reward.

    ``group`` is the advantage group: the skill for designer samples, the environment id
    for agent samples. ``env_mask`` is ``None`` when every completion token is the model's.
    ``reward`` is the training reward, ``shaping`` the part of it that plugin shaping terms
    added (the rest is the base reward: the designer's measured reward, the agent's episode
    return). ``valid`` is false for a designer turn whose environment did not pass.
    """

    role: Role
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    reward: float
    group: str
    env_mask: list[int] | None = None
    advantage: float = 0.0
    shaping: float = 0.0
    valid: bool = True

    def __post_init__(self) -> None:
        if not self.prompt_ids or not self.completion_ids:
            raise TrainerError(f"{self.role.value} sample has an empty prompt or completion")
        if len(self.logprobs) != len(self.completion_ids):
            raise TrainerError("logprobs and completion_ids differ in length")
        if self.env_mask is not None and len(self.env_mask) != len(self.completion_ids):
            raise TrainerError("env_mask and completion_ids differ in length")
        if not math.isfinite(self.reward) or not math.isfinite(self.shaping):
            raise TrainerError(f"{self.role.value} sample has non-finite reward {self.reward!r} "
                               f"(shaping {self.shaping!r})")

    @property
    def base_reward(self) -> float:
        return self.reward - self.shaping


#: What advantages are computed from: ``(role, group, reward, shaping, valid)`` of one sample.
RewardKey = tuple[str, str, float, float, bool]


def reward_keys(samples: Sequence[PolicySample]) -> list[RewardKey]:
    """What other processes need to see of each sample to compute advantages (no tokens)."""
    return [(s.role.value, s.group, s.reward, s.shaping, s.valid) for s in samples]


def _mean(xs: Sequence[float]) -> float:
    return math.fsum(xs) / len(xs)


def _designer_group(keys: Sequence[RewardKey], scale: float) -> list[float]:
    out = [0.0] * len(keys)
    valid = [i for i, k in enumerate(keys) if k[4]]
    invalid = [i for i, k in enumerate(keys) if not k[4]]

    def shaped(idx: list[int]) -> list[float]:
        return bound_shaping([keys[i][2] - keys[i][3] for i in idx], [keys[i][3] for i in idx])

    lowest_valid: float | None = None
    if valid:
        rv = shaped(valid)
        mean = _mean(rv)  # the baseline of valid designs is theirs alone
        for i, r in zip(valid, rv, strict=True):
            out[i] = (r - mean) * scale
        lowest_valid = min(out[i] for i in valid)
    if invalid:
        ri = shaped(invalid)
        # measured against the valid designs' baseline when there are some (else among
        # themselves: the CPU case), and never above the lowest valid design
        baseline = _mean(rv) if valid else _mean(ri)
        adv = [(r - baseline) * scale for r in ri]
        if lowest_valid is not None:
            adv = [a + min(0.0, lowest_valid - max(adv)) for a in adv]
        for i, a in zip(invalid, adv, strict=True):
            out[i] = a
    return out


def _agent_group(keys: Sequence[RewardKey]) -> list[float]:
    base = [k[2] - k[3] for k in keys]
    shaped = bound_shaping(base, [k[3] for k in keys])
    mean = _mean(shaped)
    centred = [r - mean for r in shaped]
    if max(shaped) - min(shaped) <= _EPS * 1e-3:
        return [0.0] * len(keys)  # equal scores: no signal (and float noise must not become one)
    bmean = _mean(base)
    std = math.sqrt(math.fsum((b - bmean) ** 2 for b in base) / len(base))
    if std <= _EPS * 1e-3:
        return centred  # returns tie: only (bounded) shaping separates them, at its own size
    return [c / (std + _EPS) for c in centred]


def advantages_of(keys: Sequence[RewardKey], *, designer_scale: float = 1.0) -> list[float]:
    """Per-role advantages of ``keys`` (see the module docstring), in order."""
    if not designer_scale > 0 or not math.isfinite(designer_scale):
        raise TrainerError(f"designer_scale must be a finite number > 0, got {designer_scale!r}")
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, k in enumerate(keys):
        groups[(k[0], k[1])].append(i)
    out = [0.0] * len(keys)
    for (role, _), idx in groups.items():
        members = [keys[i] for i in idx]
        adv = _designer_group(members, designer_scale) if role == Role.designer.value else _agent_group(members)
        for i, a in zip(idx, adv, strict=True):
            out[i] = a
    return out


def with_advantages(samples: Sequence[PolicySample], *, designer_scale: float = 1.0) -> list[PolicySample]:
    """Samples with ``advantage`` set per role (see module docstring); order is kept."""
    adv = advantages_of(reward_keys(samples), designer_scale=designer_scale)
    return [replace(s, advantage=a) for s, a in zip(samples, adv, strict=True)]


def with_pooled_advantages(
    samples: Sequence[PolicySample], everyone: Sequence[Sequence[RewardKey]], rank: int,
    *, designer_scale: float = 1.0,
) -> list[PolicySample]:
    """``samples`` (this process's, in order) with advantages computed over the samples of
    every process of a launch: ``everyone[r]`` holds process ``r``'s :func:`reward_keys`.

    Under data parallelism every process collects its own samples of the same skills (and
    sometimes the same environments); pooling makes one group's baseline the mean over all
    of its samples, as one process collecting them all would compute. With one process it
    is :func:`with_advantages`.
    """
    if not 0 <= rank < len(everyone):
        raise TrainerError(f"rank {rank} is not one of the {len(everyone)} processes whose rewards were gathered")
    if [tuple(k) for k in everyone[rank]] != reward_keys(samples):
        raise TrainerError(f"the rewards gathered for rank {rank} are not this process's samples")
    offset = sum(len(keys) for keys in everyone[:rank])
    flat = [tuple(k) for keys in everyone for k in keys]
    adv = advantages_of(flat, designer_scale=designer_scale)  # type: ignore[arg-type]
    return [replace(s, advantage=a) for s, a in zip(samples, adv[offset:offset + len(samples)], strict=True)]
