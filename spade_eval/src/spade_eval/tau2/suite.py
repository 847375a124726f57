"""The ``tau2_bench`` episode suite: ``size`` trials of each chosen task, and pass^k over
them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spade_core.evaluation import EpisodeSuite, EvalItem, SuiteContext

from ..dialogue import resolve_user_backend
from ._common import Tau2DataError
from .domains import check_supported, read_domain
from .env import MAX_AGENT_TURNS, Tau2Env
from .judge import resolve_judge
from .tasks import Tau2Task, domain_folders, load_domain, split_task_ids


def pass_hat_k(num_trials: int, successes: int, k: int) -> float:
    """tau-bench's pass^k of one task: C(successes, k) / C(num_trials, k)."""
    if not 1 <= k <= num_trials or not 0 <= successes <= num_trials:
        raise ValueError(f"pass^k needs 1 <= k <= trials and 0 <= successes <= trials (k={k}, trials={num_trials}, "
                         f"successes={successes})")
    return math.comb(successes, k) / math.comb(num_trials, k)


def pass_hat_ks(episodes: Sequence[Any]) -> dict[str, dict[int, float]]:
    """Per domain, pass^k for k = 1 .. the fewest trials of any of its tasks: the mean over
    tasks of :func:`pass_hat_k`. ``episodes`` are the harness's per-episode rows (``group``:
    ``domain/task``, ``success``); episodes that failed before their first turn (the task is
    unavailable) are left out, as the benchmark leaves out infrastructure errors."""
    per_task: dict[str, list[bool]] = {}
    for e in episodes:
        if e.error is not None and e.turns == 0:
            continue
        per_task.setdefault(e.group, []).append(bool(e.success))
    by_domain: dict[str, dict[str, list[bool]]] = {}
    for group, trials in per_task.items():
        by_domain.setdefault(group.split("/", 1)[0], {})[group] = trials
    out: dict[str, dict[int, float]] = {}
    for domain, tasks in sorted(by_domain.items()):
        max_k = min(len(t) for t in tasks.values())
        out[domain] = {k: sum(pass_hat_k(len(t), sum(t), k) for t in tasks.values()) / len(tasks)
                       for k in range(1, max_k + 1)}
    return out


def _names(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, int) and not isinstance(value, bool):  # -o ids=5 arrives as a JSON number
        value = str(value)
    if isinstance(value, str):
        return [v for v in value.replace(",", " ").split() if v]
    return [str(v) for v in value]


def tau2_items(context: SuiteContext, *, size: int = 1, seed: int = 0, data: str | Path | None = None,
               domains: Any = None, ids: Any = None, user: Any = None, split: Any = None,
               judge: Any = None) -> Sequence[EvalItem]:
    """``size`` trials of each task of each chosen domain (default: every domain folder);
    the simulated user is ``user``'s model, the NL-assertion judge ``judge``'s (default:
    the user's)."""
    if data is None:
        raise Tau2DataError("suite tau2_bench reads tau2-bench's data: give -o data=FOLDER (its data/tau2/domains, "
                            "or one domain folder with tasks.json, db.json and policy.md)")
    if size < 1:
        raise Tau2DataError(f"size (trials per task) must be at least 1, got {size}")
    backend = resolve_user_backend(user, getattr(context, "plugins", None), suite="tau2_bench")
    judged_by = resolve_judge(judge, backend, getattr(context, "plugins", None))
    wanted = set(_names(ids))
    items: list[EvalItem] = []
    for folder in domain_folders(Path(data), _names(domains)):
        tasks = load_domain(folder)
        if split is not None:
            chosen = split_task_ids(folder, str(split))
            tasks = [t for t in tasks if t.id in chosen]
        if wanted:
            tasks = [t for t in tasks if t.id in wanted or t.label in wanted]
        shared: dict[str, Any] = {}

        def make(task: Tau2Task, folder: Path = folder, shared: dict[str, Any] = shared) -> Tau2Env:
            check_supported(task)
            if "db" not in shared:  # read once per domain, on the first episode that needs it
                shared.update(read_domain(folder, task.domain))
            return Tau2Env(task, shared["db"], shared["policy"], backend, base_user_db=shared["user_db"],
                           judge=judged_by)

        for task in tasks:
            for k in range(size):
                items.append(EvalItem(group=task.label, seed=seed + k, label=task.label, max_turns=MAX_AGENT_TURNS,
                                      column=f"tau2-{task.domain}", make_env=lambda task=task, make=make: make(task)))
    if wanted:
        found = {i.label for i in items} | {i.label.split("/", 1)[1] for i in items}
        missing = sorted(wanted - found)
        if missing:
            raise Tau2DataError(f"{data}: no task {', '.join(missing)}")
    if not items:
        raise Tau2DataError(f"{data}: no task to evaluate")
    return items


SUITE = EpisodeSuite(
    name="tau2_bench",
    description="tau2-bench (adapter on the published format; the package is not installable here): each task a "
                "conversation with a simulated user (-o user=openai:URL#MODEL), tools on an in-memory copy of the "
                "domain database (retail, airline and telecom implemented, telecom's user acting on its phone "
                "through tools of its own; other domains named as unavailable), scored by DB, ENV_ASSERTION, ACTION, "
                "COMMUNICATE and NL_ASSERTION (an LLM judge, -o judge=openai:URL#MODEL, by default the user's model) "
                "as the benchmark does; --size trials per task (pass^k).",
    items=tau2_items,
    trusted=True,
    options={"data": "tau2-bench's data/tau2/domains folder, or one domain folder (tasks.json, db.json or db.toml, "
                     "policy.md or main_policy.md + tech_support_manual.md)",
             "domains": "comma-separated domain folders (default: all found)",
             "ids": "comma-separated task ids (or domain/id) instead of every task",
             "split": "a task split of each domain's split_tasks.json (such as telecom's base)",
             "user": "the simulated user's model: openai:BASE_URL#MODEL",
             "judge": "the NL-assertion judge's model: openai:BASE_URL#MODEL (default: the user's)"},
    defaults={"size": 1, "temperature": 0.0, "max_new_tokens": 1024},
)
