"""The Reasoning-Gym hard split as a suite (``spade eval --suite reasoning_gym_hard``): the
100 datasets at their hard parameters, in the SPADE paper's four columns (Math 31,
Algorithmic 36, Cognition 24, Logic 9).

The task list, each task's parameters and column, and the paper's evaluation settings are
read from ``data/rg_hard_a3.json``, a copy of the hard configurations of the Reasoning-Gym
paper (arXiv 2505.24760, Appendix A.3) with the SPADE paper's column of each task and its
settings (8 episodes per task, up to 2 turns, temperature 0.6, 8,192 new tokens).

An episode is one question, answered as ``\\boxed{...}`` and scored by the dataset's own
scorer; a wrong first answer is told so and may be corrected once (the second turn). A
task's score is its win rate (episodes scoring 1); a column's is the mean of its tasks'.

A dataset that cannot be built with its parameters on the installed Reasoning-Gym is not
dropped: its episodes stay in the suite, each failing at once with the builder's error,
so the result names it per task (errors) and per column (``unavailable``, left out of the
column's mean), and ``spade eval`` prints it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from spade_core.errors import SpadeError
from spade_core.evaluation import EpisodeSuite, EvalItem, SuiteContext

from .suite import ReasoningGymEnv, SuiteOptionError

#: Metadata keys under which a dataset keeps its reference answer when ``answer`` is
#: empty (the puzzle has many answers and the scorer checks the one given).
REFERENCE_KEYS = ("possible_answer", "example_answer", "example_correct_answer")


class DatasetUnavailable(SpadeError, RuntimeError):
    """A hard-split dataset that the installed Reasoning-Gym cannot build with its parameters."""


@dataclass(frozen=True)
class HardTask:
    dataset: str
    column: str
    config: dict[str, Any]
    #: Place in the data file: the task's seed stream, the same in a slice as in the full suite.
    index: int


@dataclass(frozen=True)
class HardSplit:
    evaluation: dict[str, Any]
    columns: dict[str, int]
    tasks: tuple[HardTask, ...]


@cache
def hard_split() -> HardSplit:
    """The split as the package's data file states it."""
    raw = json.loads(resources.files(__package__).joinpath("data/rg_hard_a3.json").read_text(encoding="utf-8"))
    tasks = tuple(HardTask(t["dataset"], t["column"], dict(t["hard_config"]), i) for i, t in enumerate(raw["tasks"]))
    return HardSplit(dict(raw["evaluation"]), dict(raw["columns"]), tasks)


class HardTaskEnv(ReasoningGymEnv):
    """A hard-split question: up to ``attempts`` answers, the last (or first right) one scored."""

    def __init__(self, dataset: Any, entry: dict[str, Any], task: str, attempts: int) -> None:
        super().__init__(dataset, entry, task)
        self.attempts = attempts
        self.answered = 0

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, score, _, _, info = super().step(action)
        self.answered += 1
        if score >= 1.0 or self.answered >= self.attempts:
            return obs, score, True, False, info
        return (f"{obs} Try again: give your final answer as \\boxed{{...}}.", 0.0, False, False, info)

    def solution(self) -> str:
        """The dataset's own reference answer (``answer``, else the metadata's example)."""
        answer = self.entry.get("answer")
        if answer is None or answer == "":
            meta = self.entry.get("metadata") or {}
            answer = next((meta[k] for k in REFERENCE_KEYS if meta.get(k) not in (None, "")), "")
        if not isinstance(answer, str):
            answer = json.dumps(answer)
        return f"\\boxed{{{answer}}}"


def _unavailable(task: str, reason: str) -> HardTaskEnv:
    raise DatasetUnavailable(f"Reasoning-Gym cannot build {task} with its hard parameters: {reason}")


def _chosen(option: Any) -> list[str]:
    if option is None:
        return []
    return [t for t in (option.replace(",", " ").split() if isinstance(option, str) else [str(o) for o in option]) if t]


def hard_tasks(tasks: Any = None, columns: Any = None) -> list[HardTask]:
    """The tasks of the split, all or those named (``tasks``) or of the named ``columns``."""
    split = hard_split()
    by_name = {t.dataset: t for t in split.tasks}
    names, cols = _chosen(tasks), _chosen(columns)
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise SuiteOptionError(f"not in the hard split: {', '.join(unknown)}")
    lower = {c.lower(): c for c in split.columns}
    unknown = [c for c in cols if c.lower() not in lower]
    if unknown:
        raise SuiteOptionError(f"unknown column(s) {', '.join(unknown)}; columns: {', '.join(split.columns)}")
    chosen = list(split.tasks)
    if names:
        chosen = [by_name[n] for n in names]
    if cols:
        wanted = {lower[c.lower()] for c in cols}
        chosen = [t for t in chosen if t.column in wanted]
    return chosen


def hard_items(
    context: SuiteContext, *, size: int = 8, seed: int = 0, tasks: Any = None, columns: Any = None,
) -> Sequence[EvalItem]:
    """``size`` questions of each chosen task at its hard parameters; a task's questions
    come from seed ``seed + 1000 * (its place in the data file)``."""
    import reasoning_gym

    del context  # plugin code: nothing of the store is needed
    attempts = int(hard_split().evaluation["max_turns"])
    items = []
    for task in hard_tasks(tasks, columns):
        group = f"{task.column}/{task.dataset}"
        try:
            dataset = reasoning_gym.create_dataset(task.dataset, size=size, seed=seed + 1000 * task.index, **task.config)
            entries = [dataset[i] for i in range(size)]
        except Exception as exc:  # the installed release refuses these parameters: reported, not dropped
            reason = f"{type(exc).__name__}: {exc}"[:300]
            items += [EvalItem(group=group, seed=seed + i, label=task.dataset, max_turns=attempts, column=task.column,
                               make_env=lambda n=task.dataset, r=reason: _unavailable(n, r)) for i in range(size)]
            continue
        items += [EvalItem(group=group, seed=seed + i, label=task.dataset, max_turns=attempts, column=task.column,
                           make_env=lambda d=dataset, e=entry, n=task.dataset: HardTaskEnv(d, e, n, attempts))
                  for i, entry in enumerate(entries)]
    return items


def _defaults() -> dict[str, Any]:
    settings = hard_split().evaluation
    return {"size": settings["episodes_per_task"], "temperature": settings["temperature"],
            "max_new_tokens": settings["max_new_tokens"]}


SUITE = EpisodeSuite(
    name="reasoning_gym_hard",
    description="Reasoning-Gym's hard split as the SPADE paper evaluates it: 100 datasets at their hard parameters "
                "in four columns (Math 31, Algorithmic 36, Cognition 24, Logic 9), up to 2 turns per question, "
                "a column's score the mean of its tasks' win rates; plugin code, run in-process.",
    items=hard_items,
    trusted=True,
    options={"tasks": "comma-separated dataset names of the split (default: all 100)",
             "columns": "comma-separated columns (Math, Algorithmic, Cognition, Logic)"},
    defaults=_defaults(),
)
