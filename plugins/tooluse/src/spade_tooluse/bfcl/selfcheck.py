"""The suite's self-check: every entry's ground truth replayed (graded by us, and the calls
the environment recorded accepted by the official checker), and agreement with the official
checker on mutated trajectories (``python -m spade_tooluse.bfcl``)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from .loader import CATEGORIES, load_entries
from .mutation import MUTATIONS, mutate
from .official import official_verdict
from .trajectories import ground_truth_trajectory, score_trajectory


@dataclass
class SuiteReport:
    """Figures of one suite run (JSON-serialisable through :meth:`to_dict`)."""

    entries: int = 0
    replay_passed: int = 0
    replay_failures: list[str] = field(default_factory=list)
    #: Replays whose recorded calls the official checker accepts as well.
    replay_official_passed: int = 0
    per_category: dict[str, list[int]] = field(default_factory=dict)  # category -> [passed, total]
    mutated: int = 0
    agreed: int = 0
    official_valid: int = 0
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    per_mutation: dict[str, list[int]] = field(default_factory=dict)  # kind -> [agreed, total]

    @property
    def agreement(self) -> float:
        return self.agreed / self.mutated if self.mutated else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "entries": self.entries,
            "replay_passed": self.replay_passed,
            "replay_failures": self.replay_failures,
            "replay_official_passed": self.replay_official_passed,
            "per_category": self.per_category,
            "mutated": self.mutated,
            "agreed": self.agreed,
            "agreement": self.agreement,
            "official_valid": self.official_valid,
            "per_mutation": self.per_mutation,
            "disagreements": self.disagreements,
        }


def run_suite(
    categories: Sequence[str] = CATEGORIES,
    *,
    mutations: int = 200,
    seed: int = 0,
    progress: bool = False,
) -> SuiteReport:
    """Replay every entry's ground truth, then score ``mutations`` mutated trajectories with
    both this package's grading and the official checker."""
    entries = load_entries(categories)
    report = SuiteReport(entries=len(entries))
    rng = random.Random(seed)
    ctx: Any = nullcontext()
    if progress:
        from rich.progress import Progress

        ctx = Progress(transient=True)
    with ctx as bar:
        task = bar.add_task("ground-truth replay", total=len(entries)) if progress else None
        for entry in entries:
            r = score_trajectory(entry, ground_truth_trajectory(entry))
            official = official_verdict(entry, r["played"], tag=f"r_{entry.id}")
            report.replay_official_passed += int(official)
            ok = r["bfcl_valid"] and r["reward"] == 1.0 and official
            cat = report.per_category.setdefault(entry.category, [0, 0])
            cat[1] += 1
            if ok:
                report.replay_passed += 1
                cat[0] += 1
            else:
                report.replay_failures.append(entry.id)
            if progress:
                bar.advance(task)
        task = bar.add_task("mutated trajectories", total=mutations) if progress else None
        n = 0
        while n < mutations:
            entry = rng.choice(entries)
            kind = MUTATIONS[n % len(MUTATIONS)]
            mutated = mutate(ground_truth_trajectory(entry), kind, rng)
            if mutated is None:
                continue
            ours = score_trajectory(entry, mutated)["bfcl_valid"]
            theirs = official_verdict(entry, mutated, tag=f"m{n}")
            report.mutated += 1
            report.official_valid += int(theirs)
            stats = report.per_mutation.setdefault(kind, [0, 0])
            stats[1] += 1
            if ours == theirs:
                report.agreed += 1
                stats[0] += 1
            else:
                report.disagreements.append({"entry": entry.id, "mutation": kind, "ours": ours, "official": theirs})
            n += 1
            if progress:
                bar.advance(task)
    return report
