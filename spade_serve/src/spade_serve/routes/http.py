"""OpenEnv's plain HTTP routes, at the root (a server of one environment, or naming
``env_id`` in the reset body) and under ``/envs/{env_id}``: ``POST /reset``, ``POST
/step``, ``GET /state``, ``GET /metadata``, ``GET /schema``, ``GET /health``; a served
environment's own OpenAPI document (``/envs/{env_id}/openapi.json``), ``GET /status`` and
``DELETE /sessions/{id}``.

``/reset`` without a session id opens a session and answers its id in the
``X-Spade-Session`` header and in ``observation.metadata.session_id``; later requests name
it (that header, or a ``session_id`` field / query parameter), so reset then step plays one
episode.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from ..errors import ServeError
from ..models import SpadeAction, SpadeObservation, SpadeState, wire_result
from ..wire import EnvironmentMetadata, HealthResponse, HealthStatus, SchemaResponse, StepRequest
from .server_state import SESSION_HEADER, client_of, invalid, json_body, reset_request, server_of

#: The answer of ``/schema``: the wire models of a SPADE environment, the same for every one.
SCHEMA = SchemaResponse(
    action=SpadeAction.model_json_schema(),
    observation=SpadeObservation.model_json_schema(),
    state=SpadeState.model_json_schema(),
)
PREFIXES = ("", "/envs/{env_id}")


async def do_reset(request: Request, env_id: str | None = None) -> JSONResponse:
    server = server_of(request)
    body = await json_body(request)
    named = body.pop("env_id", None)
    has_session = "session_id" in body or SESSION_HEADER.lower() in request.headers
    session = server.session_for(request, body, env_id) if has_session else None
    reset = reset_request(body)
    task, target = await server.reset_target(session, reset, client_of(request), env_id, named)
    new = session is None
    if session is None:
        session = await server.manager.open(target, client_of(request), "http")
    try:
        obs = await server.reset(session, reset, task, target)
    except ServeError:
        if new:
            await server.manager.close(session)
        raise
    return JSONResponse(wire_result(obs), headers={SESSION_HEADER: session.id})


async def do_step(request: Request, env_id: str | None = None) -> JSONResponse:
    server = server_of(request)
    body = await json_body(request)
    session = server.session_for(request, body, env_id)
    try:
        step = StepRequest.model_validate(body)
        action = SpadeAction.model_validate(step.action)
    except ValidationError as exc:
        raise invalid(exc, "step request") from None
    obs = await server.manager.step(session, action.message)
    return JSONResponse(wire_result(obs), headers={SESSION_HEADER: session.id})


async def do_state(request: Request, env_id: str | None = None) -> JSONResponse:
    session = server_of(request).session_for(request, {}, env_id)
    return JSONResponse(session.state().model_dump())


async def do_metadata(request: Request, env_id: str | None = None) -> EnvironmentMetadata:
    m = server_of(request).env_for(env_id).metadata
    return EnvironmentMetadata(name=m.id, description=m.description or m.name, version=str(m.version))


async def health(request: Request, env_id: str | None = None) -> HealthResponse:
    if env_id is not None:
        server_of(request).catalog.get(env_id)
    return HealthResponse(status=HealthStatus.HEALTHY)


async def env_openapi(request: Request, env_id: str) -> dict[str, Any]:
    """The API of one environment's base URL (its routes under ``/envs/<id>``, with that
    prefix as the document's server), so OpenEnv's clients and ``openenv validate``
    see each served environment as a server of its own."""
    env = server_of(request).catalog.get(env_id)
    whole = request.app.openapi()
    prefix = "/envs/{env_id}"
    paths = {p[len(prefix):]: ops for p, ops in whole.get("paths", {}).items() if p.startswith(prefix + "/")}
    return {**whole, "servers": [{"url": f"/envs/{env.id}"}], "paths": paths}


async def get_schema(request: Request, env_id: str | None = None) -> SchemaResponse:
    if env_id is not None:
        server_of(request).catalog.get(env_id)
    return SCHEMA


async def status(request: Request) -> dict[str, Any]:
    return server_of(request).manager.stats()


async def close_session(request: Request, session_id: str) -> dict[str, Any]:
    manager = server_of(request).manager
    await manager.close(manager.get(session_id))
    return {"closed": session_id}


def register(app: FastAPI) -> None:
    for prefix in PREFIXES:
        app.add_api_route(f"{prefix}/reset", do_reset, methods=["POST"])
        app.add_api_route(f"{prefix}/step", do_step, methods=["POST"])
        app.add_api_route(f"{prefix}/state", do_state, methods=["GET"])
        app.add_api_route(f"{prefix}/metadata", do_metadata, methods=["GET"], response_model=EnvironmentMetadata)
    for prefix in PREFIXES:
        app.add_api_route(f"{prefix}/health", health, methods=["GET"], response_model=HealthResponse)
    app.add_api_route("/envs/{env_id}/openapi.json", env_openapi, methods=["GET"], include_in_schema=False)
    for prefix in PREFIXES:
        app.add_api_route(f"{prefix}/schema", get_schema, methods=["GET"], response_model=SchemaResponse)
    app.add_api_route("/status", status, methods=["GET"])
    app.add_api_route("/sessions/{session_id}", close_session, methods=["DELETE"])


__all__ = ["SCHEMA", "register"]
