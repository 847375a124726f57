"""Reasoning-Gym tasks as single-turn environments, grouped as the SPADE paper groups its
held-out Reasoning-Gym evaluation: math, algorithmic, cognition, logic.

Each item is one generated question: ``reset`` shows it and asks for the answer as
``\\boxed{...}``; ``step`` scores the boxed answer with the task's own scorer (a partial
score counts as partial return; success is a score of 1) and ends the episode. A reply
without a box is scored whole, as Reasoning-Gym's own evaluation does.

The scorers parse the reply (some with sympy, whose cost the reply decides: ``9**9**9**9``
never ends), so each answer is scored in a forked child bounded in time and memory
(:func:`spade_core.bounded.call_bounded`); an answer it cannot score in them, one longer
than :data:`MAX_ANSWER_CHARS` or one that reads as a non-finite number (``nan`` passes a
scorer testing ``abs(x - gold) > tol``) scores 0, the reason in the step's
``info["scoring_error"]``, which the harness keeps in the episode's record.

Reasoning-Gym is trusted plugin code (a package installed from the registry, not designed
code): its environments run in the evaluating process, as seed environments do.

Questions are reproducible: ``create_dataset(task, size=size, seed=seed + k)`` with ``k``
the task's place in its group, so each task gets its own seed stream. The task lists below
are chosen to have a scorer that accepts its own reference answer and questions short
enough for small models; they use Reasoning-Gym's default difficulty.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spade_core.actions import find_boxed
from spade_core.answers import finite_number, names_non_finite
from spade_core.bounded import BoundedCallError, call_bounded
from spade_core.errors import SpadeError
from spade_core.evaluation import EpisodeSuite, EvalItem, SuiteContext

GROUPS: dict[str, tuple[str, ...]] = {
    "math": ("basic_arithmetic", "chain_sum", "gcd", "lcm", "fraction_simplification", "simple_equations",
             "polynomial_multiplication", "decimal_arithmetic"),
    "algorithmic": ("base_conversion", "caesar_cipher", "count_primes", "letter_counting", "spell_backward",
                    "word_sorting", "number_sorting", "isomorphic_strings"),
    "cognition": ("number_sequence", "color_cube_rotation", "modulo_grid"),
    "logic": ("knights_knaves", "syllogism", "aiw", "self_reference", "circuit_logic"),
}


#: What one answer's scoring may take (:func:`spade_core.bounded.call_bounded`): the
#: tasks' scorers parse the reply, some with sympy, whose cost the reply decides.
SCORER_TIMEOUT_S = 5.0
SCORER_MEMORY_MB = 512
#: Longest answer handed to a scorer; a longer one is scored 0 unread.
MAX_ANSWER_CHARS = 20_000


class SuiteOptionError(SpadeError, ValueError):
    """An unknown group or task."""


def _score(dataset: Any, answer: str, entry: dict[str, Any]) -> float:
    """The task's score of ``answer`` as a plain float (what a bounded call sends back)."""
    return float(dataset.score_answer(answer, entry))


class ReasoningGymEnv:
    """One Reasoning-Gym question as a one-turn reference-format environment."""

    def __init__(self, dataset: Any, entry: dict[str, Any], task: str) -> None:
        self.dataset = dataset
        self.entry = entry
        self.task = task

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        del seed  # the question was generated from the suite's seed
        text = f"{self.entry['question']}\n\nGive your final answer as \\boxed{{...}}."
        return text, {"task": self.task}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        boxed = find_boxed(action)
        answer = boxed[-1] if boxed else action.strip()
        info: dict[str, Any] = {"task": self.task, "answer": answer}
        if names_non_finite(answer):
            # a scorer testing "far" as ``abs(x - gold) > tol`` would pass nan (spade_core.answers)
            score = 0.0
            info["scoring_error"] = f"the answer {answer[:40]!r} is not a finite number"
        elif len(answer) > MAX_ANSWER_CHARS:
            score = 0.0
            info["scoring_error"] = f"the answer is {len(answer)} characters, more than the {MAX_ANSWER_CHARS} checked"
        else:
            try:  # the task's scorer parses the reply (sympy for some): bounded, in a child
                score = finite_number(call_bounded(_score, self.dataset, answer, self.entry,
                                                   timeout_s=SCORER_TIMEOUT_S, memory_mb=SCORER_MEMORY_MB)) or 0.0
            except BoundedCallError as exc:  # a scorer that chokes on a malformed answer: a wrong answer
                score = 0.0
                info["scoring_error"] = f"the task's scorer gave no score: {exc}"
        score = min(1.0, max(0.0, score))
        verdict = "correct" if score >= 1.0 else ("partly correct" if score > 0 else "wrong")
        return f"Your answer is {verdict}.", score, True, False, info

    def solution(self) -> str:
        return f"\\boxed{{{self.entry['answer']}}}"

    def close(self) -> None:
        pass


def _tasks(groups: Any, tasks: Any) -> list[tuple[str, str]]:
    if tasks:
        chosen = [t for t in (tasks.replace(",", " ").split() if isinstance(tasks, str) else tasks)]
        by_task = {t: g for g, ts in GROUPS.items() for t in ts}
        from reasoning_gym.factory import DATASETS

        unknown = [t for t in chosen if t not in DATASETS]
        if unknown:
            raise SuiteOptionError(f"unknown Reasoning-Gym task(s): {', '.join(unknown)}")
        return [(by_task.get(t, "other"), t) for t in chosen]
    names = list(GROUPS) if not groups else (groups.replace(",", " ").split() if isinstance(groups, str) else list(groups))
    unknown = [g for g in names if g not in GROUPS]
    if unknown:
        raise SuiteOptionError(f"unknown group(s) {', '.join(unknown)}; groups: {', '.join(GROUPS)}")
    return [(g, t) for g in names for t in GROUPS[g]]


def reasoning_gym_items(
    context: SuiteContext, *, size: int = 4, seed: int = 0, groups: Any = None, tasks: Any = None,
) -> Sequence[EvalItem]:
    """``size`` questions of every task of the chosen groups (default: all four)."""
    import reasoning_gym

    del context  # plugin code: nothing of the store is needed
    items = []
    for k, (group, task) in enumerate(_tasks(groups, tasks)):
        dataset = reasoning_gym.create_dataset(task, size=size, seed=seed + 1000 * k)
        for i in range(size):
            entry = dataset[i]
            items.append(EvalItem(group=f"{group}/{task}", seed=seed + i, label=task, max_turns=1,
                                  make_env=lambda d=dataset, e=entry, t=task: ReasoningGymEnv(d, e, t)))
    return items


SUITE = EpisodeSuite(
    name="reasoning_gym",
    description="Reasoning-Gym procedural tasks in four groups (math, algorithmic, cognition, logic), one question "
                "per episode, scored by each task's own scorer; plugin code, run in-process.",
    items=reasoning_gym_items,
    trusted=True,
    options={"groups": "comma-separated groups (math, algorithmic, cognition, logic)",
             "tasks": "comma-separated Reasoning-Gym task names instead of groups"},
)
