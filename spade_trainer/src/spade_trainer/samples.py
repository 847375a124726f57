"""Training samples of both roles, and their per-role advantages.

A :class:`PolicySample` is one sequence the shared policy produced: a designer sample is
the design prompt and the environment code it wrote; an agent sample is one episode's
multi-turn trajectory (environment tokens marked 0 in ``env_mask``). Advantages are
computed per role — designer rewards centred per skill (no std division), agent returns
normalised per environment — then handed to the GRPO step unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from .errors import TrainerError
from .rewards import centre_by_group, normalise_by_group


class Role(StrEnum):
    designer = "designer"
    agent = "agent"


@dataclass(frozen=True)
class PolicySample:
    """One sampled sequence with its role reward.

    ``group`` is the advantage group: the skill for designer samples, the environment id
    for agent samples. ``env_mask`` is ``None`` when every completion token is the model's.
    """

    role: Role
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    reward: float
    group: str
    env_mask: list[int] | None = None
    advantage: float = 0.0

    def __post_init__(self) -> None:
        if not self.prompt_ids or not self.completion_ids:
            raise TrainerError(f"{self.role.value} sample has an empty prompt or completion")
        if len(self.logprobs) != len(self.completion_ids):
            raise TrainerError("logprobs and completion_ids differ in length")
        if self.env_mask is not None and len(self.env_mask) != len(self.completion_ids):
            raise TrainerError("env_mask and completion_ids differ in length")
        if not math.isfinite(self.reward):
            raise TrainerError(f"{self.role.value} sample has non-finite reward {self.reward!r}")


def with_advantages(samples: Sequence[PolicySample]) -> list[PolicySample]:
    """Samples with ``advantage`` set per role (see module docstring); order is kept."""
    out = list(samples)
    for role, compute in ((Role.designer, centre_by_group), (Role.agent, normalise_by_group)):
        idx = [i for i, s in enumerate(out) if s.role is role]
        if not idx:
            continue
        adv = compute([out[i].reward for i in idx], [out[i].group for i in idx])
        for i, a in zip(idx, adv, strict=True):
            out[i] = replace(out[i], advantage=a)
    return out


#: What advantages are computed from: ``(role, group, reward)`` of one sample.
RewardKey = tuple[str, str, float]


def reward_keys(samples: Sequence[PolicySample]) -> list[RewardKey]:
    """The ``(role, group, reward)`` of each sample: all that other processes need to see."""
    return [(s.role.value, s.group, s.reward) for s in samples]


def with_pooled_advantages(
    samples: Sequence[PolicySample], everyone: Sequence[Sequence[RewardKey]], rank: int
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
    if list(everyone[rank]) != reward_keys(samples):
        raise TrainerError(f"the rewards gathered for rank {rank} are not this process's samples")
    offset = sum(len(keys) for keys in everyone[:rank])
    flat = [k for keys in everyone for k in keys]
    out = list(samples)
    for role, compute in ((Role.designer, centre_by_group), (Role.agent, normalise_by_group)):
        idx = [i for i, k in enumerate(flat) if k[0] == role.value]
        if not idx:
            continue
        adv = compute([flat[i][2] for i in idx], [flat[i][1] for i in idx])
        for i, a in zip(idx, adv, strict=True):
            if offset <= i < offset + len(out):
                out[i - offset] = replace(out[i - offset], advantage=a)
    return out


def fit_to_capacity(samples: Sequence[PolicySample], capacity: int) -> tuple[list[PolicySample], int, int]:
    """Exactly ``capacity`` samples for one GRPO step: ``(samples, padded, dropped)``.

    Missing slots are filled with copies of the shortest sample at advantage 0 (they add no
    gradient); surplus samples with the smallest |advantage| (least signal) are dropped.
    """
    if capacity < 1:
        raise TrainerError(f"capacity must be >= 1, got {capacity}")
    if not samples:
        raise TrainerError("no samples to train on this iteration")
    kept = list(samples)
    dropped = max(0, len(kept) - capacity)
    if dropped:
        order = sorted(range(len(kept)), key=lambda i: abs(kept[i].advantage))
        gone = set(order[:dropped])
        kept = [s for i, s in enumerate(kept) if i not in gone]
    padded = capacity - len(kept)
    if padded:
        filler = replace(min(kept, key=lambda s: len(s.completion_ids)), advantage=0.0)
        kept.extend([filler] * padded)
    return kept, padded, dropped
