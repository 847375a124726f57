"""The web app: OpenEnv's routes over SPADE sessions (FastAPI, as OpenEnv's server).

Routes, at the root (for a server of one environment, or naming ``env_id`` in the reset
body) and under ``/envs/{env_id}`` (so OpenEnv's clients reach any served
environment with ``base_url=http://host:port/envs/<id>``):

* ``WS  /ws`` — OpenEnv's WebSocket protocol: ``{"type": "reset"|"step"|"state"|"close",
  "data": ...}`` in; ``{"type": "observation"|"state"|"error", "data": ...}`` out. One
  connection is one session; ``?session_id=<id>`` plays an open session instead (openenv's
  MCP client plays the session its ``/mcp`` calls opened), which outlives the connection.
* ``POST /reset``, ``POST /step``, ``GET /state`` — plain HTTP. ``/reset`` without a session
  id opens a session and answers its id in the ``X-Spade-Session`` header and in
  ``observation.metadata.session_id``; later requests name it (that header, or a
  ``session_id`` field / query parameter), so reset then step plays one episode.
  ``DELETE /sessions/{id}`` closes one.
* ``GET /schema``, ``GET /metadata``, ``GET /health``, ``GET /envs`` (what is served, a
  page at a time: :mod:`spade_serve.listing`), ``GET /envs/{env_id}`` (one environment's
  row), ``GET /status`` (sessions, queued calls, workers).
* OpenEnv's Task API: ``GET /list_environments``, ``GET /{env_name}/splits``, ``POST
  /{env_name}/tasks``, ``/num_tasks``, ``/task``, ``/task_range`` (an environment's seeds
  and knob settings, :mod:`spade_serve.tasks`); a reset plays one with ``split`` and
  ``index``.
* ``POST /mcp``, ``DELETE /mcp`` — MCP tools over JSON-RPC 2.0 (MCP's streamable HTTP
  transport, and openenv's ``openenv/session/*`` methods): ``initialize`` opens and resets
  a session (its id in ``Mcp-Session-Id``), ``tools/list`` gives the environment's tools,
  ``tools/call`` steps the episode with one call; see :mod:`spade_serve.mcp_tools`.
  ``GET /mcp`` answers 405 (no server-to-client stream).

Every error is ``{"type": "error", "data": {"code", "message", ...}}`` with an HTTP status
that matches it (see :mod:`spade_serve.errors`), but ``/mcp``'s, which are JSON-RPC errors
carrying that payload as their ``data``; nothing answers with a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError
from starlette.routing import WebSocketRoute

from . import json_input, listing
from .access import AccessGuard, AccessRules
from .catalog import ServedEnv
from .errors import (
    EpisodeStateError,
    InvalidRequest,
    RequestTooLarge,
    ServeError,
    Unauthorized,
    UnknownEnv,
)
from .mcp_tools import MCP_SESSION_HEADER, McpAnswer, McpEndpoint, McpRequestContext
from .models import SpadeAction, SpadeObservation, SpadeState, wire_result
from .sessions import Session, SessionManager, check_seed
from .tasks import Task, TaskCatalog
from .wire import (
    EnvironmentMetadata,
    GetTaskRangeRequest,
    GetTaskRequest,
    HealthResponse,
    HealthStatus,
    ListTasksRequest,
    NumTasksRequest,
    ResetRequest,
    SchemaResponse,
    StepRequest,
    WSErrorCode,
    WSErrorResponse,
    WSObservationResponse,
    WSResetMessage,
    WSStateResponse,
    WSStepMessage,
)

log = logging.getLogger("spade_serve")

SESSION_HEADER = "X-Spade-Session"
#: Close codes of the WebSocket (RFC 6455): policy violation, message too big, going away.
_WS_POLICY, _WS_TOO_BIG, _WS_GOING_AWAY = 1008, 1009, 1001


def _error_body(data: dict[str, Any]) -> dict[str, Any]:
    return {"type": "error", "data": data}


def error_response(exc: ServeError) -> JSONResponse:
    headers = {"Retry-After": "1"} if exc.http_status == 503 else None
    return JSONResponse(_error_body(exc.payload()), status_code=exc.http_status, headers=headers)


def _validation_details(exc: ValidationError) -> list[dict[str, Any]]:
    return [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors()]


def _invalid(exc: ValidationError, what: str) -> InvalidRequest:
    first = "; ".join(f"{'.'.join(map(str, e['loc'])) or what}: {e['msg']}" for e in exc.errors()[:5])
    return InvalidRequest(f"invalid {what}: {first}", errors=_validation_details(exc))


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


def create_app(manager: SessionManager) -> FastAPI:
    """The FastAPI app serving ``manager``'s catalog. Its lifespan starts the idle-session
    reaper and, at shutdown, closes every session, worker and the zygote."""
    settings = manager.settings
    catalog = manager.catalog
    tasks = TaskCatalog(kept=catalog.kept)  # one budget for what the server keeps (spade_serve.kept)
    secret = settings.cursor_secret
    cursor_key = listing.cursor_key(secret.get_secret_value() if secret is not None else None)
    schema = SchemaResponse(
        action=SpadeAction.model_json_schema(),
        observation=SpadeObservation.model_json_schema(),
        state=SpadeState.model_json_schema(),
    )

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
    app.add_middleware(_BodyLimit, limit=settings.max_request_bytes)

    def authorized(headers: Any) -> bool:
        if settings.token is None:
            return True
        given = headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), settings.token.encode())

    @app.middleware("http")
    async def guard(request: Request, call_next: Any) -> Response:
        if request.url.path != "/health" and not authorized(request.headers):
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

    @app.exception_handler(ServeError)
    async def serve_error(request: Request, exc: ServeError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error serving %s", request.url.path)
        data = {"code": WSErrorCode.SESSION_ERROR.value, "message": f"internal error ({type(exc).__name__})"}
        return JSONResponse(_error_body(data), status_code=500)

    def env_for(env_ref: str | None, named: Any = None) -> ServedEnv:
        ref = env_ref or named
        if ref is not None:
            if not isinstance(ref, str):
                raise InvalidRequest(f"env_id must be a string, got {type(ref).__name__}")
            return catalog.get(ref)
        default = catalog.default
        if default is None:
            raise UnknownEnv(
                "this server serves several environments: use /envs/<env_id>/... or name env_id in the reset"
            )
        return default

    def session_for(request: Request, body: dict[str, Any], env_ref: str | None) -> Session:
        sid = body.pop("session_id", None) or request.headers.get(SESSION_HEADER) or request.query_params.get("session_id")
        if not sid:
            raise InvalidRequest(
                f"no session: send the id /reset answered ({SESSION_HEADER} header or a session_id field)"
            )
        if not isinstance(sid, str):
            raise InvalidRequest(f"session_id must be a string, got {type(sid).__name__}")
        session = manager.get(sid)
        if env_ref is not None and catalog.get(env_ref).id != session.env.id:
            raise InvalidRequest(f"session {sid} is a session of {session.env.id}, not of {env_ref}")
        return session

    async def json_body(request: Request) -> dict[str, Any]:
        raw = await request.body()
        if not raw.strip():
            return {}
        try:
            body = json_input.loads(raw)
        except json_input.MalformedJson as exc:
            raise InvalidRequest(f"the body is not JSON this server takes: {exc}") from None
        if not isinstance(body, dict):
            raise InvalidRequest(f"the body must be a JSON object, got {type(body).__name__}")
        return body

    def client_of(conn: Request | WebSocket) -> str:
        return conn.client.host if conn.client is not None else "unknown"

    # --- plain HTTP ----------------------------------------------------------------
    async def http_reset(request: Request, env_ref: str | None) -> JSONResponse:
        body = await json_body(request)
        named = body.pop("env_id", None)
        has_session = "session_id" in body or SESSION_HEADER.lower() in request.headers
        session = session_for(request, body, env_ref) if has_session else None
        reset = _reset_request(body)
        if session is None:
            manager.check_room(client_of(request))  # refused before anything is resolved or made
        base = catalog.get(session.env.id) if session is not None else env_for(env_ref, named)
        task, target = await task_of(base, reset)
        new = session is None
        if session is None:
            session = await manager.open(target, client_of(request), "http")
        try:
            # a task at another knob setting than the session's switches it (same session id)
            obs = await manager.reset(session, task.seed if task else reset.seed, reset.episode_id,
                                      env=target if task is not None else None)
        except ServeError:
            if new:
                await manager.close(session)
            raise
        return JSONResponse(wire_result(obs), headers={SESSION_HEADER: session.id})

    async def http_step(request: Request, env_ref: str | None) -> JSONResponse:
        body = await json_body(request)
        session = session_for(request, body, env_ref)
        try:
            step = StepRequest.model_validate(body)
            action = SpadeAction.model_validate(step.action)
        except ValidationError as exc:
            raise _invalid(exc, "step request") from None
        obs = await manager.step(session, action.message)
        return JSONResponse(wire_result(obs), headers={SESSION_HEADER: session.id})

    async def http_state(request: Request, env_ref: str | None) -> JSONResponse:
        session = session_for(request, {}, env_ref)
        return JSONResponse(session.state().model_dump())

    def metadata_of(env: ServedEnv) -> EnvironmentMetadata:
        m = env.metadata
        return EnvironmentMetadata(name=m.id, description=m.description or m.name, version=str(m.version))

    for prefix in ("", "/envs/{env_id}"):
        _routes(app, prefix, http_reset, http_step, http_state, lambda ref: metadata_of(env_for(ref)))

    # Before the Task API's ``GET /{env_name}/splits``, which would take ``/envs/splits``.
    @app.get("/envs/{env_id}")
    async def env_summary(env_id: str) -> dict[str, Any]:
        """One served environment's ``GET /envs`` row, by id or name, whether it is listed
        up front or resolved from the registry on first use (404 with the reason)."""
        if catalog.whole_registry:  # may read the store: off the event loop
            return (await manager.gate.run(catalog.get, env_id)).summary()
        return catalog.get(env_id).summary()

    # --- OpenEnv's Task API ------------------------------------------------------------
    async def task_of(env: ServedEnv, reset: ResetRequest) -> tuple[Task | None, ServedEnv]:
        """The task a reset names (``split`` and ``index``) and the environment that plays
        it (the variant at its knob setting); ``(None, env)`` when it names none."""
        extra = reset.model_extra or {}
        if "split" not in extra and "index" not in extra:
            return None, env
        return await manager.gate.run(tasks.resolve, env, extra.get("split"), extra.get("index"), reset.seed)

    def task_env(env_id: str | None, env_name: str) -> ServedEnv:
        """The environment a Task API route names: ``env_name``, which under
        ``/envs/<env_id>/`` must be that environment."""
        env = catalog.get(env_name)
        if env_id is not None and catalog.get(env_id).id != env.id:
            raise UnknownEnv(f"{env_name!r} is not the environment of this route ({env_id})", env_id=env_name)
        return env

    def task_body(model: Any, body: dict[str, Any]) -> Any:
        try:
            return model.model_validate(body)
        except ValidationError as exc:
            raise _invalid(exc, "task request") from None

    async def list_environments(env_id: str | None = None) -> list[str]:
        if env_id is not None:
            return [catalog.get(env_id).id]
        return [e.id for e in catalog.listed()]

    async def list_splits(env_name: str, env_id: str | None = None) -> list[dict[str, Any]]:
        task_env(env_id, env_name)
        return tasks.splits()

    async def list_tasks(request: Request, env_name: str, env_id: str | None = None) -> dict[str, Any]:
        env, asked = task_env(env_id, env_name), task_body(ListTasksRequest, await json_body(request))
        found = await manager.gate.run(tasks.preview, env, asked.split)
        return {"tasks": [t.spec() for t in found], "env_name": env.id}

    async def num_tasks(request: Request, env_name: str, env_id: str | None = None) -> dict[str, Any]:
        env, asked = task_env(env_id, env_name), task_body(NumTasksRequest, await json_body(request))
        return {"num_tasks": await manager.gate.run(tasks.num_tasks, env, asked.split)}

    async def get_task(request: Request, env_name: str, env_id: str | None = None) -> dict[str, Any]:
        env, asked = task_env(env_id, env_name), task_body(GetTaskRequest, await json_body(request))
        return {"task": (await manager.gate.run(tasks.task, env, asked.split, asked.index)).spec()}

    async def get_task_range(request: Request, env_name: str, env_id: str | None = None) -> dict[str, Any]:
        env, asked = task_env(env_id, env_name), task_body(GetTaskRangeRequest, await json_body(request))
        found = await manager.gate.run(tasks.task_range, env, asked.split, asked.start, asked.stop)
        return {"tasks": [t.spec() for t in found]}

    for prefix in ("", "/envs/{env_id}"):
        app.add_api_route(f"{prefix}/list_environments", list_environments, methods=["GET"], tags=["Task API"])
        app.add_api_route(f"{prefix}/{{env_name}}/splits", list_splits, methods=["GET"], tags=["Task API"])
        app.add_api_route(f"{prefix}/{{env_name}}/tasks", list_tasks, methods=["POST"], tags=["Task API"])
        app.add_api_route(f"{prefix}/{{env_name}}/num_tasks", num_tasks, methods=["POST"], tags=["Task API"])
        app.add_api_route(f"{prefix}/{{env_name}}/task", get_task, methods=["POST"], tags=["Task API"])
        app.add_api_route(f"{prefix}/{{env_name}}/task_range", get_task_range, methods=["POST"], tags=["Task API"])

    @app.get("/health", response_model=HealthResponse)
    @app.get("/envs/{env_id}/health", response_model=HealthResponse)
    async def health(env_id: str | None = None) -> HealthResponse:
        if env_id is not None:
            catalog.get(env_id)
        return HealthResponse(status=HealthStatus.HEALTHY)

    @app.get("/envs/{env_id}/openapi.json", include_in_schema=False)
    async def env_openapi(env_id: str) -> dict[str, Any]:
        """The API of one environment's base URL (its routes under ``/envs/<id>``, with that
        prefix as the document's server), so OpenEnv's clients and ``openenv validate``
        see each served environment as a server of its own."""
        env = catalog.get(env_id)
        whole = app.openapi()
        prefix = "/envs/{env_id}"
        paths = {p[len(prefix):]: ops for p, ops in whole.get("paths", {}).items() if p.startswith(prefix + "/")}
        return {**whole, "servers": [{"url": f"/envs/{env.id}"}], "paths": paths}

    @app.get("/schema", response_model=SchemaResponse)
    @app.get("/envs/{env_id}/schema", response_model=SchemaResponse)
    async def get_schema(env_id: str | None = None) -> SchemaResponse:
        if env_id is not None:
            catalog.get(env_id)
        return schema

    @app.get("/envs")
    async def list_envs(request: Request) -> dict[str, Any]:
        query = listing.parse_query(request.query_params.multi_items())
        if catalog.registry is not None:  # reads the store: off the event loop
            return await manager.gate.run(listing.page, catalog, query, cursor_key)
        return listing.page(catalog, query, cursor_key)

    @app.get("/status")
    async def status() -> dict[str, Any]:
        return manager.stats()

    # --- MCP ------------------------------------------------------------------------
    mcp = McpEndpoint(manager, lambda ref: env_for(ref), tasks)

    def mcp_context(request: Request, env_ref: str | None) -> McpRequestContext:
        named = request.query_params.get("env_id")
        return McpRequestContext(
            env_ref=env_ref or named,
            session_header=request.headers.get(MCP_SESSION_HEADER),
            seed=request.query_params.get("seed"),
            client=client_of(request),
            split=request.query_params.get("split"),
            index=request.query_params.get("index"),
        )

    def mcp_response(answer: McpAnswer) -> Response:
        if answer.body is None:
            return Response(status_code=answer.status, headers=answer.headers)
        return JSONResponse(answer.body, status_code=answer.status, headers=answer.headers)

    async def mcp_post(request: Request, env_id: str | None = None) -> Response:
        return mcp_response(await mcp.post(await request.body(), mcp_context(request, env_id)))

    async def mcp_delete(request: Request, env_id: str | None = None) -> Response:
        return mcp_response(await mcp.delete(mcp_context(request, env_id)))

    async def mcp_get(env_id: str | None = None) -> Response:
        # No server-to-client stream: every answer comes back on its POST.
        return Response(status_code=405, headers={"Allow": "POST, DELETE"})

    for path in ("/mcp", "/envs/{env_id}/mcp"):
        app.add_api_route(path, mcp_post, methods=["POST"])
        app.add_api_route(path, mcp_delete, methods=["DELETE"])
        app.add_api_route(path, mcp_get, methods=["GET"])

    @app.delete("/sessions/{session_id}")
    async def close_session(session_id: str) -> dict[str, Any]:
        await manager.close(manager.get(session_id))
        return {"closed": session_id}

    # --- WebSocket ------------------------------------------------------------------
    async def ws_session(websocket: WebSocket, env_ref: str | None) -> None:
        if not authorized(websocket.headers):
            await websocket.close(code=_WS_POLICY, reason="this server needs 'Authorization: Bearer <token>'")
            return
        await websocket.accept()
        session: Session | None = None
        #: Whether the connection ends its session: not one it attached to (``?session_id=``,
        #: how openenv's MCP client resets and steps the session its ``/mcp`` calls opened).
        owned = True
        client = client_of(websocket)

        async def send_error(exc: ServeError) -> None:
            await websocket.send_text(_error_text(exc))

        async def server_closed(reason: str) -> None:
            with contextlib.suppress(Exception):
                data = {"code": "SESSION_CLOSED", "message": f"the server closed this session ({reason})"}
                await websocket.send_text(WSErrorResponse(data=data).model_dump_json())
                await websocket.close(code=_WS_GOING_AWAY, reason=reason)

        async def start(env: str | ServedEnv) -> Session:
            opened = await manager.open(env, client, "ws")
            opened.on_server_close = server_closed
            return opened

        async def next_message() -> str:
            """The next message; a socket holding no session is closed after
            ``idle_timeout_s`` without one (a session's idleness is the reaper's)."""
            if session is not None:
                return await websocket.receive_text()
            try:
                return await asyncio.wait_for(websocket.receive_text(), settings.idle_timeout_s)
            except TimeoutError:
                await server_closed("idle")
                raise WebSocketDisconnect(_WS_GOING_AWAY) from None

        async def answer(raw: str) -> str | None:
            """The reply to one message, as JSON text; ``None`` when the connection ends.
            A function of its own so that the message, its models and the observation are
            freed once answered instead of held by the loop while it waits."""
            nonlocal session, owned
            if len(raw) > settings.max_request_bytes:
                await send_error(RequestTooLarge(f"message over {settings.max_request_bytes} bytes"))
                await websocket.close(code=_WS_TOO_BIG)
                return None
            try:
                message = json_input.loads(raw)
            except json_input.MalformedJson as exc:
                return _error_text(_Coded(WSErrorCode.INVALID_JSON.value, f"Invalid JSON: {exc}"))
            kind = message.get("type", "") if isinstance(message, dict) else ""
            try:
                if kind == "reset":
                    data = dict(WSResetMessage.model_validate(message).data)
                    named = data.pop("env_id", None)
                    reset = _reset_request(data)
                    if session is not None and named is not None and catalog.get(named).id != session.env.id:
                        if not owned:
                            raise InvalidRequest(f"this connection plays session {session.id} of {session.env.id}, not {named}")
                        await manager.close(session)
                        session = None
                    if session is None:
                        manager.check_room(client)  # refused before anything is resolved or made
                    base = catalog.get(session.env.id) if session is not None else env_for(env_ref, named)
                    task, target = await task_of(base, reset)
                    if session is None:
                        session = await start(target)
                    # a task at another knob setting switches the session, attached (an MCP
                    # session, openenv's MCP client) or not, keeping its id
                    obs = await manager.reset(session, task.seed if task else reset.seed, reset.episode_id,
                                              env=target if task is not None else None)
                    reply: Any = WSObservationResponse(data=wire_result(obs))
                elif kind == "step":
                    action = SpadeAction.model_validate(WSStepMessage.model_validate(message).data)
                    if session is None:
                        raise EpisodeStateError("step before reset: send a reset first")
                    obs = await manager.step(session, action.message)
                    reply = WSObservationResponse(data=wire_result(obs))
                elif kind == "state":
                    state = session.state() if session is not None else SpadeState()
                    reply = WSStateResponse(data=state.model_dump())
                elif kind == "close":
                    return None
                else:
                    raise _Coded(WSErrorCode.UNKNOWN_TYPE.value, f"Unknown message type: {kind!r}")
                return str(reply.model_dump_json())
            except ValidationError as exc:
                return _error_text(_invalid(exc, f"{kind or 'message'}"))
            except ServeError as exc:
                if session is not None and session.closed:
                    session, owned = None, True  # ended with its worker; a reset opens a fresh one
                return _error_text(exc)

        try:
            attach = websocket.query_params.get("session_id")
            if attach:
                session, owned = manager.get(attach), False
                if env_ref is not None and catalog.get(env_ref).id != session.env.id:
                    raise InvalidRequest(f"session {attach} is a session of {session.env.id}, not of {env_ref}")
                session.on_server_close = server_closed
            elif env_ref is not None or catalog.default is not None:
                manager.check_room(client)
                session = await start(env_for(env_ref).id)
            while (text := await answer(await next_message())) is not None:
                await websocket.send_text(text)
        except (WebSocketDisconnect, RuntimeError):
            pass  # the client left (or the server closed the socket): the session goes below
        except ServeError as exc:
            with contextlib.suppress(Exception):
                await send_error(exc)
                await websocket.close(code=_WS_POLICY if isinstance(exc, Unauthorized) else 1013)
        finally:
            if session is not None and owned:
                await manager.close(session)
            elif session is not None and session.on_server_close is server_closed:
                session.on_server_close = None  # the session outlives this connection

    async def ws_root(websocket: WebSocket) -> None:
        await ws_session(websocket, None)

    async def ws_env(websocket: WebSocket) -> None:
        await ws_session(websocket, websocket.path_params["env_id"])

    # Starlette's own WebSocket routes, not FastAPI's: FastAPI's resolves dependencies and
    # keeps two exit stacks per connection for the life of the socket (about 3 KiB of
    # every WebSocket session in the server), and these endpoints take none.
    app.router.routes.append(WebSocketRoute("/ws", ws_root))
    app.router.routes.append(WebSocketRoute("/envs/{env_id}/ws", ws_env))
    # Outermost (added last): Host, Origin and body type are checked before the token,
    # the body limit or any route (spade_serve.access).
    # ``app.state.access_rules`` may be replaced before serving (a Space's --host, --allow-host).
    app.state.access_rules = AccessRules.of(settings)
    app.add_middleware(AccessGuard, rules=lambda: app.state.access_rules)

    return app


class _Coded(ServeError):
    """An error with one of OpenEnv's own codes (INVALID_JSON, UNKNOWN_TYPE)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _error_text(exc: ServeError) -> str:
    """A WebSocket error message (OpenEnv's ``WSErrorResponse``) as JSON text."""
    return WSErrorResponse(data=exc.payload()).model_dump_json()


def _reset_request(data: dict[str, Any]) -> ResetRequest:
    """The reset's fields (seed >= 0, episode_id, and a task's split and index); any other
    field is named as unknown (a SPADE environment takes no other reset arguments)."""
    try:
        reset = ResetRequest.model_validate(data)
    except ValidationError as exc:
        raise _invalid(exc, "reset request") from None
    check_seed(reset.seed)
    unknown = sorted(set(data) - {"seed", "episode_id", "split", "index"})
    if unknown:
        raise InvalidRequest(
            f"unknown reset field(s): {', '.join(map(str, unknown))} (a reset takes seed, episode_id, env_id, split, index)"
        )
    return reset


def _routes(app: FastAPI, prefix: str, reset: Any, step: Any, state: Any, metadata: Any) -> None:
    async def do_reset(request: Request, env_id: str | None = None) -> JSONResponse:
        return await reset(request, env_id)

    async def do_step(request: Request, env_id: str | None = None) -> JSONResponse:
        return await step(request, env_id)

    async def do_state(request: Request, env_id: str | None = None) -> JSONResponse:
        return await state(request, env_id)

    async def do_metadata(env_id: str | None = None) -> EnvironmentMetadata:
        return metadata(env_id)

    app.add_api_route(f"{prefix}/reset", do_reset, methods=["POST"])
    app.add_api_route(f"{prefix}/step", do_step, methods=["POST"])
    app.add_api_route(f"{prefix}/state", do_state, methods=["GET"])
    app.add_api_route(f"{prefix}/metadata", do_metadata, methods=["GET"], response_model=EnvironmentMetadata)


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
