"""One episode's world: fresh copies of the domain's databases with a task's initial state
applied, and a tool call run on them as the benchmark runs one."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from ._common import Tau2DataError, deep_update
from .domains import DOMAINS, USER_SIDES, check_supported
from .tasks import Tau2Task


def canonical(db: dict[str, Any]) -> str:
    """A database as one text, equal for equal databases (what the ``DB`` score compares)."""
    return json.dumps(db, sort_keys=True, ensure_ascii=False)


def run_tool(tools: Any, name: str, arguments: dict[str, Any], declared: dict[str, Any]) -> tuple[str, bool]:
    """A tool call's result text and whether it failed (``Error: ...``, as the benchmark returns)."""
    if name not in declared:
        return f"Error: Tool '{name}' not found.", True
    try:
        if hasattr(tools, "_arguments"):  # a domain whose tools check their arguments against the declarations
            arguments = tools._arguments(name, arguments)
        value = getattr(tools, name)(**arguments)
    except (TypeError, ValueError, KeyError) as exc:
        return f"Error: {exc}", True
    return (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)), False


@dataclass
class World:
    """One episode's state: the agent's database and tools and, in a dual-control domain,
    the user's database and tools, kept in step by the domain's sync."""

    domain: str
    db: dict[str, Any]
    tools: Any
    user_db: dict[str, Any] | None = None
    user_tools: Any = None

    def sync(self) -> None:
        if self.user_tools is not None:
            USER_SIDES[self.domain].sync(self.tools, self.user_tools)

    def side(self, requestor: str) -> tuple[Any, dict[str, Any]]:
        """The tools and declarations a requestor (``assistant`` or ``user``) calls."""
        if requestor == "user":
            return self.user_tools, USER_SIDES[self.domain].declared
        return self.tools, DOMAINS[self.domain][1]

    def call(self, task: Tau2Task, where: str, spec: dict[str, Any]) -> Any:
        """An environment function call of the task file (the benchmark's
        ``run_env_function_call``: the function by name, its arguments as given, then a sync)."""
        tools = self.user_tools if spec.get("env_type", "assistant") == "user" else self.tools
        name = spec["func_name"]
        try:
            result = getattr(tools, name)(**dict(spec.get("arguments") or {}))
        except (TypeError, ValueError, KeyError) as exc:
            raise Tau2DataError(f"tau2 task {task.label}: {where} {name} failed: {exc}") from None
        self.sync()
        return result


def make_world(task: Tau2Task, base: dict[str, Any], base_user: dict[str, Any] | None = None) -> World:
    """Fresh copies of the domain's databases with the task's initial state applied: its
    ``initialization_data`` (agent and user data merged in), then its
    ``initialization_actions`` in order, each followed by the sync (an assertion among them,
    one with an ``assert_value``, must hold), then a last sync."""
    check_supported(task)
    db = copy.deepcopy(base)
    state = task.initial_state or {}
    data = state.get("initialization_data") or {}
    if data.get("agent_data"):
        deep_update(db, data["agent_data"])
    world = World(task.domain, db, DOMAINS[task.domain][0](db))
    side = USER_SIDES.get(task.domain)
    if side is not None:
        world.user_db = copy.deepcopy(base_user) if base_user is not None else side.default_db()
        if data.get("user_data"):
            deep_update(world.user_db, data["user_data"])
        world.user_tools = side.tools(world.user_db)
    for k, spec in enumerate(state.get("initialization_actions") or []):
        result = world.call(task, f"initialization action {k}", spec)
        if "assert_value" in spec and result != spec["assert_value"]:
            raise Tau2DataError(f"tau2 task {task.label}: initialization action {k} {spec['func_name']} does not hold")
    world.sync()
    return world


def initial_db(task: Tau2Task, base: dict[str, Any]) -> dict[str, Any]:
    """A fresh copy of the domain database with the task's initial state applied."""
    return make_world(task, base).db
