"""The designer's memory: earlier environments, retrieved for a design prompt.

Everything lives in the :class:`~spade_core.store.EnvStore` already (every designed
environment with its skill, measured win rate and regret, validation report and
lineage); this module only decides what a prompt shows. For a (domain, skill), with the
reference recipe's defaults:

* the newest ``policy.window`` environments of the domain are considered; rejected
  candidates (kept in the store as retired, with a failed validation) take no place there;
* ``high_regret`` examples of the same skill with measured win rate inside ``band``,
  drawn at random from the top ``max(3n, 10)`` by regret (per design when the caller
  passes a random generator; the top ``n`` without one), shown as "make something different";
* ``negatives`` of the same skill: measured win rate outside ``negative_band`` (too easy
  above it, too hard below), newest first;
* ``failures``: newest environments whose validation failed, with the reasons (our
  addition; ``failures = 0`` is the reference);
* across all roles no two shown examples are near-duplicates of each other
  (token-shingle Jaccard >= ``near_duplicate``), and none repeats a code hash.

With ``same_skill_only = False`` other skills fill empty places (after the requested
skill's when ``same_skill_first``); ties break on recency.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from spade_core.store import EnvStore

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

    def retrieve(self, domain: str, skill: str, *, rng: random.Random | None = None) -> MemorySelection:
        """The examples for one design prompt; ``rng`` draws among equals (``None``: deterministic)."""
        ...


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

    def __init__(self, store: EnvStore, policy: MemoryPolicy | None = None, *, name: str = "store") -> None:
        self.store = store
        self.policy = policy or MemoryPolicy()
        self.name = name

    def recent(self, domain: str) -> list[EnvMetadata]:
        """The newest ``policy.window`` environments of ``domain`` that are not rejected
        candidates, newest first."""
        return self._newest(domain, lambda m: not _rejected(m))

    def recent_rejects(self, domain: str) -> list[EnvMetadata]:
        """The newest ``policy.window`` rejected candidates of ``domain``, newest first."""
        return self._newest(domain, _rejected)

    def _newest(self, domain: str, keep: Any) -> list[EnvMetadata]:
        want = self.policy.window
        end = self.store.count(domain=domain)
        out: list[EnvMetadata] = []
        while end > 0 and len(out) < want:
            start = max(0, end - want)
            rows = self.store.find(domain=domain, offset=start, limit=end - start)
            out.extend(m for m in reversed(rows) if keep(m))
            end = start
        return out[:want]

    def retrieve(self, domain: str, skill: str, *, rng: random.Random | None = None) -> MemorySelection:
        pol = self.policy
        pool = self.recent(domain)
        if pol.same_skill_only:
            pool = [m for m in pool if m.skill == skill]
        elif pol.same_skill_first:
            pool.sort(key=lambda m: m.skill != skill)  # stable: recency kept within groups
        lo, hi = pol.band
        picker = _DiversePicker(self.store, pol)

        in_band = [m for m in pool if _measured(m) and lo <= m.latest_stats.win_rate <= hi]  # type: ignore[union-attr]
        # stable sort on (other skill, -regret): requested-skill examples first when asked
        in_band.sort(key=lambda m: (pol.same_skill_first and m.skill != skill,
                                    -(m.latest_stats.regret or 0.0)))  # type: ignore[union-attr]
        if rng is not None and pol.high_regret:
            top = in_band[: max(pol.high_regret_pool_factor * pol.high_regret, pol.high_regret_pool_min)]
            drawn = rng.sample(top, len(top))  # a random order of the top; the picker takes the first fit
            order = {m.id: n for n, m in enumerate(in_band)}
            chosen = picker.pick(drawn, pol.high_regret)
            picker.add(sorted(chosen, key=lambda m: order[m.id]), lambda m: "different")  # shown best first
        else:
            picker.take(in_band, pol.high_regret, lambda m: "different")

        nlo, nhi = pol.negative_band
        outside = [m for m in pool if _measured(m) and not nlo <= m.latest_stats.win_rate <= nhi]  # type: ignore[union-attr]
        picker.take(outside, pol.negatives, lambda m: "too_easy" if m.latest_stats.win_rate > nhi else "too_hard")  # type: ignore[union-attr]

        if pol.failures:
            failed = [m for m in self.recent_rejects(domain) if not pol.same_skill_only or m.skill == skill]
            picker.take(failed, pol.failures, lambda m: "failure")
        return MemorySelection(tuple(picker.chosen), considered=len(pool))


def _rejected(meta: EnvMetadata) -> bool:
    """A candidate that failed validation (stored so failures can be shown, never played)."""
    return meta.validation is not None and not meta.validation.passed


def _measured(meta: EnvMetadata) -> bool:
    s = meta.latest_stats
    return s is not None and s.samples > 0


@dataclass
class _DiversePicker:
    store: EnvStore
    policy: MemoryPolicy
    chosen: list[MemoryExample] = field(default_factory=list)
    _shingles: list[frozenset[int]] = field(default_factory=list)
    _hashes: set[str] = field(default_factory=set)

    def pick(self, ranked: list[EnvMetadata], k: int) -> list[EnvMetadata]:
        """The first ``k`` of ``ranked`` that repeat no chosen code and are no near-duplicate
        of a chosen example or of each other (nothing is added yet)."""
        out: list[EnvMetadata] = []
        seen_hashes = set(self._hashes)
        seen = list(self._shingles)
        for meta in ranked:
            if len(out) >= k:
                break
            if meta.code_hash in seen_hashes:
                continue
            sh = shingles(self.store.get_source(meta.id))
            if any(jaccard(sh, other) >= self.policy.near_duplicate for other in seen):
                continue
            out.append(meta)
            seen.append(sh)
            seen_hashes.add(meta.code_hash)
        return out

    def take(self, ranked: list[EnvMetadata], k: int, role: Any) -> None:
        self.add(self.pick(ranked, k), role)

    def add(self, metas: list[EnvMetadata], role: Any) -> None:
        for meta in metas:
            code = self.store.get_source(meta.id)
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
            self._shingles.append(shingles(code))
            self._hashes.add(meta.code_hash)
