"""The paper's diagnostics of a self-play run, read from its ``metrics.jsonl`` and ``designs.jsonl``.

* **learnable share**: of the environments played in an iteration, the share whose
  unhinted win rate lies in [0.2, 0.8] (neither solved nor hopeless);
* **diversity of the admitted pool**: the Vendi score of the admitted environments' code
  divided by their number (1: all different, 1/n: all the same), after each iteration. The
  paper embeds the code with a model; the stand-in here needs none: each source is a vector
  of its character 4-gram counts (identifiers, literals and layout included) and the kernel
  is their cosine similarity. It ranks copies and light edits as near-identical and
  different games as far apart, which is what a collapse check needs; it is not the paper's
  number;
* **distinct reward levels per environment**: how many different episode returns an
  environment gave in an iteration (1: every play scored alike, no signal for GRPO);
* **collapse**: admitted environments whose class name was admitted before, or whose code
  is a near-duplicate (similarity >= :data:`NEAR_DUPLICATE`) of one admitted before; the
  run is flagged when most of the last iterations' admissions are such repeats.
"""

from __future__ import annotations

import ast
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

LEARNABLE = (0.2, 0.8)
NEAR_DUPLICATE = 0.95
#: The collapse flag looks at this many last iterations with admissions.
COLLAPSE_WINDOW = 3
GRAM = 4
DIMS = 4096
DIVERSITY_POINTS = 50


def learnable_share(record: dict[str, Any]) -> float | None:
    """Share of an iteration's played environments with a win rate in [0.2, 0.8]."""
    rates = [v.get("win_rate") for v in (record.get("per_env") or {}).values() if isinstance(v, dict)]
    rates = [r for r in rates if isinstance(r, (int, float))]
    if not rates:
        return None
    lo, hi = LEARNABLE
    return sum(lo <= r <= hi for r in rates) / len(rates)


def reward_levels(record: dict[str, Any]) -> float | None:
    """Mean number of distinct episode returns per environment in an iteration."""
    levels = [v.get("reward_levels") for v in (record.get("per_env") or {}).values() if isinstance(v, dict)]
    levels = [n for n in levels if isinstance(n, int)]
    return sum(levels) / len(levels) if levels else None


def _vector(code: str) -> Any:
    """The unit vector of ``code``'s character 4-gram counts, hashed into :data:`DIMS` buckets."""
    import zlib

    import numpy as np

    text = " ".join(code.split())  # runs of whitespace count once
    v = np.zeros(DIMS, dtype=np.float64)
    for i in range(max(0, len(text) - GRAM + 1)):
        v[zlib.crc32(text[i : i + GRAM].encode("utf-8", "replace")) % DIMS] += 1.0
    norm = float(np.linalg.norm(v))
    return v / norm if norm else v


def vendi_score(kernel: Any) -> float:
    """exp of the Shannon entropy of the eigenvalues of ``K / n`` (K: a similarity matrix
    with ones on its diagonal); between 1 (all alike) and n (all different)."""
    import numpy as np

    n = len(kernel)
    if n == 0:
        return 0.0
    eig = np.linalg.eigvalsh(np.asarray(kernel, dtype=float) / n)
    eig = eig[eig > 1e-12]
    return float(math.exp(-float(np.sum(eig * np.log(eig)))))


def _class_name(code: str) -> str | None:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    names = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    return names[-1] if names else None


@dataclass
class Diagnostics:
    """Per iteration: learnable share, diversity / n of the admitted pool so far, distinct
    reward levels per environment, and the admitted designs that repeat an earlier one."""

    iterations: list[int] = field(default_factory=list)
    learnable: list[float | None] = field(default_factory=list)
    levels: list[float | None] = field(default_factory=list)
    diversity: list[float | None] = field(default_factory=list)
    admitted: list[int] = field(default_factory=list)
    repeats: list[int] = field(default_factory=list)
    #: ``(iteration, env_id, why)`` of each repeated admission.
    repeated: list[tuple[int, str, str]] = field(default_factory=list)

    @property
    def collapsed(self) -> bool:
        """Most admissions of the last :data:`COLLAPSE_WINDOW` iterations with any were repeats."""
        recent = [(a, r) for a, r in zip(self.admitted, self.repeats, strict=True) if a][-COLLAPSE_WINDOW:]
        total = sum(a for a, _ in recent)
        return len(recent) == COLLAPSE_WINDOW and sum(r for _, r in recent) * 2 > total


def diagnose(records: Sequence[dict[str, Any]], designs: Sequence[dict[str, Any]]) -> Diagnostics:
    """The diagnostics of a run from its metrics records and archived designs."""
    out = Diagnostics()
    by_iteration: dict[int, list[dict[str, Any]]] = {}
    for d in designs:
        if d.get("admitted") and isinstance(d.get("code"), str) and isinstance(d.get("iteration"), int):
            by_iteration.setdefault(d["iteration"], []).append(d)
    import numpy as np

    vectors: list[Any] = []
    # the score costs an n x n eigendecomposition: long runs get it at most DIVERSITY_POINTS times
    n_records = sum(isinstance(r.get("iteration"), int) for r in records)
    stride = max(1, math.ceil(n_records / DIVERSITY_POINTS))
    names: Counter[str] = Counter()
    for r in records:
        it = r.get("iteration")
        if not isinstance(it, int):
            continue
        out.iterations.append(it)
        out.learnable.append(learnable_share(r))
        out.levels.append(reward_levels(r))
        new = by_iteration.get(it, [])
        repeats = 0
        for d in new:
            v = _vector(d["code"])
            closest = float(np.max(np.stack(vectors) @ v)) if vectors else 0.0
            name = _class_name(d["code"])
            why = None
            if name and names[name]:
                why = f"class {name} admitted {names[name]} time(s) before"
            elif closest >= NEAR_DUPLICATE:
                why = f"code {closest:.2f} similar to an earlier admission"
            if why:
                repeats += 1
                out.repeated.append((it, str(d.get("env_id")), why))
            if name:
                names[name] += 1
            vectors.append(v)
        out.admitted.append(len(new))
        out.repeats.append(repeats)
        out.diversity.append(None)
        if vectors and (n_records <= DIVERSITY_POINTS or len(out.iterations) % stride == 0
                        or len(out.iterations) == n_records):
            m = np.stack(vectors)
            out.diversity[-1] = vendi_score(m @ m.T) / len(vectors)
    return out


__all__ = ["COLLAPSE_WINDOW", "Diagnostics", "LEARNABLE", "NEAR_DUPLICATE", "diagnose", "learnable_share",
           "reward_levels", "vendi_score"]
