"""``POST /mcp`` and ``DELETE /mcp`` (and under ``/envs/{env_id}``): MCP tools over JSON-RPC
2.0, MCP's streamable HTTP transport and openenv's ``openenv/session/*`` methods
(:mod:`spade_serve.mcp_tools`). ``GET /mcp`` answers 405: every answer comes back on its
POST, there is no server-to-client stream."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from ..mcp_rpc import McpAnswer, McpRequestContext
from ..mcp_tools import MCP_SESSION_HEADER
from .server_state import client_of, server_of


def mcp_context(request: Request, env_ref: str | None) -> McpRequestContext:
    query = request.query_params
    return McpRequestContext(
        env_ref=env_ref or query.get("env_id"),
        session_header=request.headers.get(MCP_SESSION_HEADER),
        seed=query.get("seed"),
        client=client_of(request),
        split=query.get("split"),
        index=query.get("index"),
    )


def mcp_response(answer: McpAnswer) -> Response:
    if answer.body is None:
        return Response(status_code=answer.status, headers=answer.headers)
    return JSONResponse(answer.body, status_code=answer.status, headers=answer.headers)


async def mcp_post(request: Request, env_id: str | None = None) -> Response:
    return mcp_response(await server_of(request).mcp.post(await request.body(), mcp_context(request, env_id)))


async def mcp_delete(request: Request, env_id: str | None = None) -> Response:
    return mcp_response(await server_of(request).mcp.delete(mcp_context(request, env_id)))


async def mcp_get(env_id: str | None = None) -> Response:
    return Response(status_code=405, headers={"Allow": "POST, DELETE"})


def register(app: FastAPI) -> None:
    for path in ("/mcp", "/envs/{env_id}/mcp"):
        app.add_api_route(path, mcp_post, methods=["POST"])
        app.add_api_route(path, mcp_delete, methods=["DELETE"])
        app.add_api_route(path, mcp_get, methods=["GET"])


__all__ = ["register"]
