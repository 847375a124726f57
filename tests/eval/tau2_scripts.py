"""Playing the tau2 suite from scripts: the agent answers from one queue of replies, the
simulated user from another, each episode's taken in item order (the tau2 tests of every
domain share this)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spade_core.evaluation import SuiteContext
from spade_designer.llm.replay import ReplayBackend
from spade_eval.harness import evaluate

from spade_eval import tau2

CTX = SuiteContext(None, None)


def write_domain(root: Path, domain: str, tasks: Any, db: Any, policy: str) -> Path:
    """``root`` holding one domain folder in the benchmark's layout (``tasks.json``,
    ``db.json``, ``policy.md``); returns ``root``."""
    folder = root / domain
    folder.mkdir(parents=True)
    (folder / "tasks.json").write_text(json.dumps(tasks, indent=2))
    (folder / "db.json").write_text(json.dumps(db, indent=2))
    (folder / "policy.md").write_text(policy)
    return root


def replay_user(said: list[Any]) -> tuple[ReplayBackend, ReplayBackend]:
    """A user answering from ``said`` in order: (the backend items get, the same backend)."""
    user = ReplayBackend(said, name="user")
    return user, user


def play_scripts(domains: Path, scripts: dict[str, tuple[list[Any], list[Any]]], *, size: int = 1,
                 user: Callable[[list[Any]], tuple[Any, Any]] = replay_user,
                 **options: Any) -> tuple[Any, ReplayBackend, Any, list[Any]]:
    """Evaluate with the agent and the user answering from ``scripts`` (task id -> (agent
    replies, user replies); episodes one at a time, in item order, so both queues are consumed
    in order). ``user`` makes the user side from its whole queue: (the backend the items
    get, the handle the test keeps). Returns (result, agent backend, user handle, items)."""
    agent_out: list[Any] = []
    user_out: list[Any] = []
    for item in tau2.tau2_items(CTX, size=size, data=str(domains), user=ReplayBackend(), **options):
        agent, said = scripts[item.label.split("/", 1)[1]]
        agent_out += agent
        user_out += said
    backend, handle = user(user_out)
    items = tau2.tau2_items(CTX, size=size, data=str(domains), user=backend, **options)
    agent_backend = ReplayBackend(agent_out, name="agent")
    result = evaluate(agent_backend, items, suite="tau2_bench", size=size, concurrency=1)
    return result, agent_backend, handle, items
