"""The designer's memory: earlier environments, retrieved for a design prompt.

Everything lives in the :class:`~spade_core.store.EnvStore` already (every designed
environment with its skill, measured win rate and regret, validation report and
lineage); this module only decides what a prompt shows. For a (domain, skill):

* the newest ``policy.window`` environments of the domain are considered;
* ``high_regret`` examples: measured win rate inside ``band``, highest regret first,
  shown as "make something different";
* ``negatives``: measured win rate outside the band (too easy above it, too hard below);
* ``failures``: environments whose validation failed, with the reasons;
* across all roles no two shown examples are near-duplicates of each other
  (token-shingle Jaccard >= ``near_duplicate``), and none repeats a code hash.

Requested-skill examples come first when ``same_skill_first``; ties break on recency.
Retrieval is deterministic for a given store state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from spade_core.metadata import EnvMetadata

from .config import MemoryPolicy

Role = Literal["different", "too_easy", "too_hard", "failure"]

_TOKEN = re.compile(r"\w+|[^\w\s]")
SHINGLE = 5


@dataclass(frozen=True)
class MemoryExample:
    env_id: str
    skill: str
    role: Role
    code: str
    description: str = ""
    win_rate: float | None = None
    regret: float | None = None
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class MemorySelection:
    examples: tuple[MemoryExample, ...] = ()
    #: How many stored environments retrieval looked at.
    considered: int = 0

    @property
    def ids(self) -> list[str]:
        return [e.env_id for e in self.examples]

    def by_role(self, role: Role) -> list[MemoryExample]:
        return [e for e in self.examples if e.role == role]


@runtime_checkable
class Memory(Protocol):
    name: str

    def retrieve(self, domain: str, skill: str) -> MemorySelection: ...


def shingles(code: str, size: int = SHINGLE) -> frozenset[int]:
    tokens = _TOKEN.findall(code)
    if len(tokens) < size:
        return frozenset({hash(tuple(tokens))}) if tokens else frozenset()
    return frozenset(hash(tuple(tokens[i : i + size])) for i in range(len(tokens) - size + 1))


def jaccard(a: frozenset[int], b: frozenset[int]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


class StoreMemory:
    """:class:`Memory` over an ``EnvStore``; see the module docstring."""

    def __init__(self, store: Any, policy: MemoryPolicy | None = None, *, name: str = "store") -> None:
        self.store = store
        self.policy = policy or MemoryPolicy()
        self.name = name

    def recent(self, domain: str) -> list[EnvMetadata]:
        """The newest ``policy.window`` environments of ``domain``, newest first."""
        total = self.store.count(domain=domain)
        rows = self.store.find(domain=domain, offset=max(0, total - self.policy.window))
        return list(reversed(rows))

    def retrieve(self, domain: str, skill: str) -> MemorySelection:
        pol = self.policy
        pool = self.recent(domain)
        if pol.same_skill_first:
            pool.sort(key=lambda m: m.skill != skill)  # stable: recency kept within groups
        lo, hi = pol.band
        picker = _DiversePicker(self.store, pol)

        in_band = [m for m in pool if _measured(m) and lo <= m.latest_stats.win_rate <= hi]  # type: ignore[union-attr]
        # stable sort on (other skill, -regret): requested-skill examples first when asked
        in_band.sort(key=lambda m: (pol.same_skill_first and m.skill != skill,
                                    -(m.latest_stats.regret or 0.0)))  # type: ignore[union-attr]
        picker.take(in_band, pol.high_regret, lambda m: "different")

        outside = [m for m in pool if _measured(m) and not lo <= m.latest_stats.win_rate <= hi]  # type: ignore[union-attr]
        picker.take(outside, pol.negatives, lambda m: "too_easy" if m.latest_stats.win_rate > hi else "too_hard")  # type: ignore[union-attr]

        failed = [m for m in pool if m.validation is not None and not m.validation.passed]
        picker.take(failed, pol.failures, lambda m: "failure")
        return MemorySelection(tuple(picker.chosen), considered=len(pool))


def _measured(meta: EnvMetadata) -> bool:
    s = meta.latest_stats
    return s is not None and s.samples > 0


@dataclass
class _DiversePicker:
    store: Any
    policy: MemoryPolicy
    chosen: list[MemoryExample] = field(default_factory=list)
    _shingles: list[frozenset[int]] = field(default_factory=list)
    _hashes: set[str] = field(default_factory=set)

    def take(self, ranked: list[EnvMetadata], k: int, role: Any) -> None:
        taken = 0
        for meta in ranked:
            if taken >= k:
                return
            if meta.code_hash in self._hashes:
                continue
            code = self.store.get_source(meta.id)
            sh = shingles(code)
            if any(jaccard(sh, other) >= self.policy.near_duplicate for other in self._shingles):
                continue
            stats = meta.latest_stats
            reasons = tuple(meta.validation.reasons) if meta.validation and not meta.validation.passed else ()
            self.chosen.append(
                MemoryExample(
                    env_id=meta.id,
                    skill=meta.skill,
                    role=role(meta),
                    code=code[: self.policy.code_prefix_chars],
                    description=meta.description,
                    win_rate=stats.win_rate if stats else None,
                    regret=stats.regret if stats else None,
                    reasons=reasons,
                )
            )
            self._shingles.append(sh)
            self._hashes.add(meta.code_hash)
            taken += 1
