"""``GET /envs`` (what a server serves, a page at a time: :mod:`spade_serve.listing`) and
``GET /envs/{env_id}`` (one environment's row, by id or name, whether it is listed up front
or resolved from the registry on first use; 404 with the reason)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request

from .. import listing
from .server_state import server_of


async def env_summary(request: Request, env_id: str) -> dict[str, Any]:
    server = server_of(request)
    if server.catalog.whole_registry:  # may read the store: off the event loop
        return (await server.manager.gate.run(server.catalog.get, env_id)).summary()
    return server.catalog.get(env_id).summary()


async def list_envs(request: Request) -> dict[str, Any]:
    server = server_of(request)
    query = listing.parse_query(request.query_params.multi_items())
    if server.catalog.registry is not None:  # reads the store: off the event loop
        return await server.manager.gate.run(listing.page, server.catalog, query, server.cursor_key)
    return listing.page(server.catalog, query, server.cursor_key)


def register(app: FastAPI) -> None:
    """Before the Task API's routes: its ``GET /{env_name}/splits`` would take ``/envs/splits``."""
    app.add_api_route("/envs/{env_id}", env_summary, methods=["GET"])
    app.add_api_route("/envs", list_envs, methods=["GET"])


__all__ = ["register"]
