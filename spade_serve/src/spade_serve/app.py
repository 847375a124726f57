"""The web app: OpenEnv's routes over SPADE sessions (FastAPI, as OpenEnv's server).

:func:`create_app` wires the routes of :mod:`spade_serve.routes` (plain HTTP: ``/reset``,
``/step``, ``/state``, ``/metadata``, ``/schema``, ``/health``; the listing ``GET /envs``;
OpenEnv's Task API; MCP at ``/mcp``; the WebSocket at ``/ws``), at the root (for a server of
one environment, or naming ``env_id`` in the reset body) and under ``/envs/{env_id}`` (so
OpenEnv's clients reach any served environment with ``base_url=http://host:port/envs/<id>``),
around a :class:`~spade_serve.sessions.SessionManager` that was handed the way its sessions'
instances are opened (:class:`~spade_serve.env_factory.SandboxEnvFactory`), as OpenEnv's
server is handed its environment factory.

Every error is ``{"type": "error", "data": {"code", "message", ...}}`` with an HTTP status
that matches it (see :mod:`spade_serve.errors`), but ``/mcp``'s, which are JSON-RPC errors
carrying that payload as their ``data``; nothing answers with a traceback. Before any route:
the Host, Origin and body type (:mod:`spade_serve.access`), the body's size, the bearer token.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from .access import AccessGuard, AccessRules
from .errors import RequestTooLarge, ServeError, Unauthorized
from .routes import http, listing, mcp, tasks, websocket
from .routes.server_state import SESSION_HEADER, ServerState, error_body, error_response, server_of
from .sessions import SessionManager
from .wire import WSErrorCode

log = logging.getLogger("spade_serve")


def create_app(manager: SessionManager) -> FastAPI:
    """The FastAPI app serving ``manager``'s catalog. Its lifespan starts the idle-session
    reaper and, at shutdown, closes every session, worker and the zygote."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        reaper = asyncio.create_task(_reap(manager))
        try:
            yield
        finally:
            reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reaper
            await manager.shutdown()

    app = FastAPI(title="spade serve", summary="SPADE environments over OpenEnv's protocol", lifespan=lifespan)
    app.state.manager = manager
    app.state.server = ServerState(manager)
    app.add_middleware(_BodyLimit, limit=manager.settings.max_request_bytes)
    app.middleware("http")(_token_guard)
    app.add_exception_handler(ServeError, _serve_error)
    app.add_exception_handler(Exception, _unexpected)
    # The listing before the Task API, whose ``GET /{env_name}/splits`` would take ``/envs/splits``.
    for routes in (http, listing, tasks, mcp, websocket):
        routes.register(app)
    # Outermost (added last): Host, Origin and body type are checked before the token,
    # the body limit or any route (spade_serve.access).
    # ``app.state.access_rules`` may be replaced before serving (a Space's --host, --allow-host).
    app.state.access_rules = AccessRules.of(manager.settings)
    app.add_middleware(AccessGuard, rules=lambda: app.state.access_rules)
    return app


async def _token_guard(request: Request, call_next: Any) -> Response:
    """Every route but ``/health`` needs the server's bearer token, when it has one."""
    if request.url.path != "/health" and not server_of(request).authorized(request.headers):
        refused = Unauthorized("this server needs 'Authorization: Bearer <token>'")
        if request.url.path.endswith("/mcp"):  # an MCP client reads a JSON-RPC error
            body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": f"Unauthorized: {refused.message}",
                                                             "data": refused.payload()}}
            return JSONResponse(body, status_code=401, headers={"WWW-Authenticate": "Bearer"})
        return error_response(refused)
    try:
        response: Response = await call_next(request)
    except ServeError as exc:
        return error_response(exc)
    return response


async def _serve_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ServeError)
    return error_response(exc)


async def _unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unexpected error serving %s", request.url.path)
    data = {"code": WSErrorCode.SESSION_ERROR.value, "message": f"internal error ({type(exc).__name__})"}
    return JSONResponse(error_body(data), status_code=500)


class _BodyLimit:
    """ASGI middleware: an HTTP body over ``limit`` bytes is answered 413 (by its declared
    length before it is read, or when the bytes received pass the limit)."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await self._too_large(scope, receive, send)
            return
        seen = 0

        async def counted() -> dict[str, Any]:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge
            return message

        try:
            await self.app(scope, counted, send)
        except _TooLarge:
            await self._too_large(scope, receive, send)

    async def _too_large(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        exc = RequestTooLarge(f"the request body is over this server's limit of {self.limit} bytes", limit=self.limit)
        await error_response(exc)(scope, receive, send)


class _TooLarge(Exception):
    pass


async def _reap(manager: SessionManager) -> None:
    """Close idle sessions, checking a few times per idle timeout."""
    period = min(5.0, max(0.05, manager.settings.idle_timeout_s / 4))
    while True:
        await asyncio.sleep(period)
        try:
            await manager.close_idle()
        except Exception:  # the reaper must outlive one bad close
            log.exception("closing idle sessions")


__all__ = ["SESSION_HEADER", "create_app", "error_response"]
