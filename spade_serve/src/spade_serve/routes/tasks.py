"""OpenEnv's Task API, at the root and under ``/envs/{env_id}``: ``GET
/list_environments``, ``GET /{env_name}/splits``, ``POST /{env_name}/tasks``,
``/num_tasks``, ``/task``, ``/task_range`` (an environment's seeds and knob settings,
:mod:`spade_serve.tasks`). A reset plays one task with ``split`` and ``index``."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from pydantic import BaseModel, ValidationError

from ..catalog import ServedEnv
from ..errors import UnknownEnv
from ..wire import GetTaskRangeRequest, GetTaskRequest, ListTasksRequest, NumTasksRequest
from .server_state import ServerState, invalid, json_body, server_of


def task_env(server: ServerState, env_id: str | None, env_name: str) -> ServedEnv:
    """The environment a Task API route names: ``env_name``, which under ``/envs/<env_id>/``
    must be that environment."""
    env = server.catalog.get(env_name)
    if env_id is not None and server.catalog.get(env_id).id != env.id:
        raise UnknownEnv(f"{env_name!r} is not the environment of this route ({env_id})", env_id=env_name)
    return env


async def task_request(request: Request, model: type[BaseModel], env_id: str | None, env_name: str) -> tuple[ServerState, ServedEnv, Any]:
    """The server, the environment a route names and its request body as ``model``."""
    server = server_of(request)
    env = task_env(server, env_id, env_name)
    try:
        return server, env, model.model_validate(await json_body(request))
    except ValidationError as exc:
        raise invalid(exc, "task request") from None


async def list_environments(request: Request, env_id: str | None = None) -> list[str]:
    catalog = server_of(request).catalog
    if env_id is not None:
        return [catalog.get(env_id).id]
    return [e.id for e in catalog.listed()]


async def list_splits(request: Request, env_name: str, env_id: str | None = None) -> list[dict[str, Any]]:
    server = server_of(request)
    task_env(server, env_id, env_name)
    return server.tasks.splits()


async def list_tasks(request: Request, env_name: str, env_id: str | None = None) -> dict[str, Any]:
    server, env, asked = await task_request(request, ListTasksRequest, env_id, env_name)
    found = await server.manager.gate.run(server.tasks.preview, env, asked.split)
    return {"tasks": [t.spec() for t in found], "env_name": env.id}


async def num_tasks(request: Request, env_name: str, env_id: str | None = None) -> dict[str, Any]:
    server, env, asked = await task_request(request, NumTasksRequest, env_id, env_name)
    return {"num_tasks": await server.manager.gate.run(server.tasks.num_tasks, env, asked.split)}


async def get_task(request: Request, env_name: str, env_id: str | None = None) -> dict[str, Any]:
    server, env, asked = await task_request(request, GetTaskRequest, env_id, env_name)
    return {"task": (await server.manager.gate.run(server.tasks.task, env, asked.split, asked.index)).spec()}


async def get_task_range(request: Request, env_name: str, env_id: str | None = None) -> dict[str, Any]:
    server, env, asked = await task_request(request, GetTaskRangeRequest, env_id, env_name)
    found = await server.manager.gate.run(server.tasks.task_range, env, asked.split, asked.start, asked.stop)
    return {"tasks": [t.spec() for t in found]}


def register(app: FastAPI) -> None:
    for prefix in ("", "/envs/{env_id}"):
        app.add_api_route(f"{prefix}/list_environments", list_environments, methods=["GET"], tags=["Task API"])
        app.add_api_route(f"{prefix}/{{env_name}}/splits", list_splits, methods=["GET"], tags=["Task API"])
        app.add_api_route(f"{prefix}/{{env_name}}/tasks", list_tasks, methods=["POST"], tags=["Task API"])
        app.add_api_route(f"{prefix}/{{env_name}}/num_tasks", num_tasks, methods=["POST"], tags=["Task API"])
        app.add_api_route(f"{prefix}/{{env_name}}/task", get_task, methods=["POST"], tags=["Task API"])
        app.add_api_route(f"{prefix}/{{env_name}}/task_range", get_task_range, methods=["POST"], tags=["Task API"])


__all__ = ["register"]
