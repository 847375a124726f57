"""The reward components of tau2-bench's evaluation (type ``all``), each on what an episode
left behind: its world, its tool calls, the agent's messages."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from spade_core.actions import ToolCall

from ._common import Tau2DataError
from .tasks import Tau2Task
from .world import World, canonical, make_world, run_tool


def db_matches(task: Tau2Task, world: World, base_db: dict[str, Any],
               base_user_db: dict[str, Any] | None = None) -> float:
    """``DB``: the final databases equal those a fresh world reaches when the task's actions
    are replayed, each by its requestor (1 when the task lists neither actions nor
    assertions)."""
    criteria = task.criteria or {}
    if criteria.get("actions") is None and criteria.get("env_assertions") is None:
        return 1.0
    # the expected actions replayed on a fresh world, each by its requestor; errors
    # ignored and no sync between them, as the benchmark's replay does
    gold = make_world(task, base_db, base_user_db)
    for a in task.actions:
        tools, declared = gold.side(a.requestor)
        run_tool(tools, a.name, copy.deepcopy(a.arguments), declared)
    same = canonical(gold.db) == canonical(world.db)
    if gold.user_db is not None and world.user_db is not None:
        same = same and canonical(gold.user_db) == canonical(world.user_db)
    return float(same)


def assertion_holds(task: Tau2Task, world: World, spec: dict[str, Any]) -> bool:
    """One of the task's env assertions on the final world (the benchmark's
    ``run_env_assertion``): the function's answer equals ``assert_value`` (default true);
    a function that fails or answers no boolean does not hold."""
    try:
        result = world.call(task, "env assertion", spec)
    except Tau2DataError:
        return False
    return isinstance(result, bool) and result == spec.get("assert_value", True)


def assertions_hold(task: Tau2Task, world: World) -> float:
    """``ENV_ASSERTION``: every env assertion of the task holds on the final world."""
    return float(all([assertion_holds(task, world, a) for a in (task.criteria or {}).get("env_assertions") or []]))


def actions_matched(task: Tau2Task, calls: Sequence[ToolCall]) -> float:
    """``ACTION``: every expected action is matched by a call, the agent's or the user's."""
    return float(all(any(a.matches(c) for c in calls) for a in task.actions))


def communicated(task: Tau2Task, agent_texts: Sequence[str]) -> float:
    """``COMMUNICATE``: every ``communicate_info`` string appears in an agent message
    (case-insensitively, commas removed)."""
    infos = (task.criteria or {}).get("communicate_info") or []
    said = [t.lower().replace(",", "") for t in agent_texts]
    return float(all(any(i.lower() in s for s in said) for i in infos))
