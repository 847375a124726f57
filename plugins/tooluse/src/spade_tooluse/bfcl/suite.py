"""BFCL-v4 multi-turn as an episode suite of ``spade eval`` (``--suite bfcl``).

Each chosen entry is one episode of a :class:`~.env.BfclEnv`, played by the harness like
any other environment (batched generation, environments stepped concurrently), and scored
by the installed benchmark's own checker (:func:`~.official.official_verdict`) when it
ends: return 1 (a success) exactly when the official checker accepts the entry; otherwise
the fraction of graded turns passed before the first failure (our turn grading), or 0 where
that grading would pass an entry the checker rejects. The two verdicts are in the step's
``info`` (``bfcl_valid``, ``official_valid``).

Where it runs: the API classes (file system, trading bot, ...) and the checker are the
``bfcl-eval`` package's code, installed from the package registry, so they are trusted
plugin code and run in the evaluating process, as seed environments and Reasoning-Gym do.
What the policy writes is never executed as code: calls are dispatched by name to those
classes' public methods, and only calls that are plain literals reach the checker.

Sizing and seeding: ``size`` entries per category, drawn without replacement by a
generator seeded with ``seed`` and the category's name (so a category's draw does not
depend on which others are chosen), played in file order; a ``size`` of 200 or more takes
every entry of a category. ``ids`` names entries instead. ``data`` reads the entries from
another folder laid out as ``bfcl_eval/data`` (see :mod:`.loader`).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spade_core.evaluation import EpisodeSuite, EvalItem, SuiteContext

from .env import STEP_LIMIT, BfclEnv
from .loader import CATEGORIES, BfclDataError, BfclEntry, load_entries
from .official import official_verdict


class OfficiallyScoredEnv:
    """A :class:`BfclEnv` whose final reward is the official checker's verdict.

    The wrapped environment plays every turn (``stop_on_failure=False``, as the benchmark
    plays them) unless asked to stop at the first failed turn, which saves generation: an
    episode so cut short, or force-terminated, is rejected as the benchmark rejects an
    entry whose conversation did not reach its last turn.
    """

    def __init__(self, entry: BfclEntry, *, stop_on_failure: bool = False) -> None:
        self.env = BfclEnv(entry, stop_on_failure=stop_on_failure)
        self.entry = entry

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        return self.env.reset(seed=seed)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if not terminated:
            return obs, reward, terminated, truncated, info
        trajectory = self.env.trajectory
        complete = not info["force_terminated"] and len(trajectory) == len(self.entry.ground_truth)
        official = complete and official_verdict(self.entry, trajectory, tag=f"eval_{uuid.uuid4().hex}")
        info = {**info, "official_valid": official}
        if official:
            reward = 1.0
        elif reward >= 1.0:
            reward = 0.0
        return obs, reward, terminated, truncated, info

    def solution(self) -> list[str]:
        return self.env.solution()

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return self.env.get_tool_schemas()

    def close(self) -> None:
        self.env.close()


def _names(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v for v in value.replace(",", " ").split() if v]
    return [str(v) for v in value]


def _flag(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in {"true", "false", "1", "0", "yes", "no"}:
        return value.lower() in {"true", "1", "yes"}
    raise BfclDataError(f"option {name} takes true or false, got {value!r}")


def _draw(entries: Sequence[BfclEntry], size: int, seed: int, category: str) -> list[BfclEntry]:
    if size >= len(entries):
        return list(entries)
    picked = random.Random(f"bfcl:{category}:{seed}").sample(range(len(entries)), size)
    return [entries[i] for i in sorted(picked)]


def bfcl_items(
    context: SuiteContext,
    *,
    size: int = 4,
    seed: int = 0,
    categories: Any = None,
    ids: Any = None,
    data: str | Path | None = None,
    stop_on_failure: Any = False,
) -> Sequence[EvalItem]:
    """``size`` entries of each chosen category (default: all four), or the entries ``ids``."""
    del context  # plugin code with its own data: nothing of the store is needed
    if size < 1:
        raise BfclDataError(f"size must be at least 1, got {size}")
    stop = _flag(stop_on_failure, "stop_on_failure")
    chosen = _names(categories) or list(CATEGORIES)
    unknown = [c for c in chosen if c not in CATEGORIES]
    if unknown:
        raise BfclDataError(f"unknown BFCL multi-turn categor{'y' if len(unknown) == 1 else 'ies'} "
                            f"{', '.join(unknown)} (known: {', '.join(CATEGORIES)})")
    wanted = _names(ids)
    if wanted:
        by_id = {e.id: e for e in load_entries(CATEGORIES, root=data)}
        missing = [i for i in wanted if i not in by_id]
        if missing:
            raise BfclDataError(f"no BFCL multi-turn entry {', '.join(missing)} (ids look like multi_turn_base_0)")
        entries = [by_id[i] for i in wanted]
    else:
        entries = [e for c in chosen for e in _draw(load_entries([c], root=data), size, seed, c)]
    return [
        EvalItem(group=e.category, seed=seed + k, label=e.id,
                 # every turn ends by itself within STEP_LIMIT + 1 messages (or the episode is force-terminated)
                 max_turns=len(e.ground_truth) * (STEP_LIMIT + 1),
                 make_env=lambda e=e: OfficiallyScoredEnv(e, stop_on_failure=stop))
        for k, e in enumerate(entries)
    ]


SUITE = EpisodeSuite(
    name="bfcl",
    description="BFCL-v4 multi-turn (base, miss_func, miss_param, long_context): each entry an episode on the "
                "benchmark's own API classes, scored by its official checker; plugin code, run in-process.",
    items=bfcl_items,
    trusted=True,
    options={"categories": "comma-separated categories (base, miss_func, miss_param, long_context)",
             "ids": "comma-separated entry ids instead of a draw (multi_turn_base_0, ...)",
             "data": "a folder laid out as bfcl_eval/data to read the entries from (default: the installed package's)",
             "stop_on_failure": "true: end an episode at its first failed turn (saves generation; scored as rejected)"},
)
