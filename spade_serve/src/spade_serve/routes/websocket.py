"""OpenEnv's WebSocket protocol at ``/ws`` and ``/envs/{env_id}/ws``: ``{"type":
"reset"|"step"|"state"|"close", "data": ...}`` in; ``{"type":
"observation"|"state"|"error", "data": ...}`` out. One connection is one session;
``?session_id=<id>`` plays an open session instead (openenv's MCP client plays the session
its ``/mcp`` calls opened), which outlives the connection.

Starlette's own WebSocket routes, not FastAPI's: FastAPI's resolves dependencies and keeps
two exit stacks per connection for the life of the socket (about 3 KiB of every WebSocket
session in the server), and these endpoints take none.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from pydantic import ValidationError
from starlette.routing import WebSocketRoute

from .. import json_input
from ..catalog import ServedEnv
from ..errors import EpisodeStateError, InvalidRequest, RequestTooLarge, ServeError, Unauthorized
from ..models import SpadeAction, SpadeState, wire_result
from ..session import Session
from ..wire import (
    WSErrorCode,
    WSErrorResponse,
    WSObservationResponse,
    WSResetMessage,
    WSStateResponse,
    WSStepMessage,
)
from .server_state import ServerState, client_of, invalid, reset_request, server_of

#: Close codes of the WebSocket (RFC 6455): policy violation, message too big, going away.
WS_POLICY, WS_TOO_BIG, WS_GOING_AWAY = 1008, 1009, 1001


class Coded(ServeError):
    """An error with one of OpenEnv's own codes (INVALID_JSON, UNKNOWN_TYPE)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def error_text(exc: ServeError) -> str:
    """A WebSocket error message (OpenEnv's ``WSErrorResponse``) as JSON text."""
    return WSErrorResponse(data=exc.payload()).model_dump_json()


class Connection:
    """One WebSocket connection and the session it plays."""

    __slots__ = ("client", "env_ref", "owned", "server", "session", "socket")

    def __init__(self, socket: WebSocket, env_ref: str | None) -> None:
        self.socket = socket
        self.server: ServerState = server_of(socket)
        self.env_ref = env_ref
        self.client = client_of(socket)
        self.session: Session | None = None
        #: Whether the connection ends its session: not one it attached to (``?session_id=``,
        #: how openenv's MCP client resets and steps the session its ``/mcp`` calls opened).
        self.owned = True

    async def run(self) -> None:
        """Serve the connection until the client leaves; then close the session it owns."""
        if not self.server.authorized(self.socket.headers):
            await self.socket.close(code=WS_POLICY, reason="this server needs 'Authorization: Bearer <token>'")
            return
        await self.socket.accept()
        try:
            await self._first_session()
            while (text := await self._answer(await self._next_message())) is not None:
                await self.socket.send_text(text)
        except (WebSocketDisconnect, RuntimeError):
            pass  # the client left (or the server closed the socket): the session goes below
        except ServeError as exc:
            with contextlib.suppress(Exception):
                await self.socket.send_text(error_text(exc))
                await self.socket.close(code=WS_POLICY if isinstance(exc, Unauthorized) else 1013)
        finally:
            session = self.session
            if session is not None and self.owned:
                await self.server.manager.close(session)
            elif session is not None and session.on_server_close is self._server_closed:
                session.on_server_close = None  # the session outlives this connection

    async def _first_session(self) -> None:
        """The session attached to (``?session_id=``), or one opened on the route's
        environment (a server of one opens it without a reset)."""
        attach = self.socket.query_params.get("session_id")
        if attach:
            session, self.owned = self.server.manager.get(attach), False
            self.server.check_session_env(session, self.env_ref)
            session.on_server_close = self._server_closed
            self.session = session
        elif self.env_ref is not None or self.server.catalog.default is not None:
            self.server.manager.check_room(self.client)
            self.session = await self._open(self.server.env_for(self.env_ref).id)

    async def _open(self, env: str | ServedEnv) -> Session:
        opened = await self.server.manager.open(env, self.client, "ws")
        opened.on_server_close = self._server_closed
        return opened

    async def _server_closed(self, reason: str) -> None:
        with contextlib.suppress(Exception):
            data = {"code": "SESSION_CLOSED", "message": f"the server closed this session ({reason})"}
            await self.socket.send_text(WSErrorResponse(data=data).model_dump_json())
            await self.socket.close(code=WS_GOING_AWAY, reason=reason)

    async def _next_message(self) -> str:
        """The next message; a socket holding no session is closed after ``idle_timeout_s``
        without one (a session's idleness is the reaper's)."""
        if self.session is not None:
            return await self.socket.receive_text()
        try:
            return await asyncio.wait_for(self.socket.receive_text(), self.server.settings.idle_timeout_s)
        except TimeoutError:
            await self._server_closed("idle")
            raise WebSocketDisconnect(WS_GOING_AWAY) from None

    async def _answer(self, raw: str) -> str | None:
        """The reply to one message, as JSON text; ``None`` when the connection ends. A
        method of its own so that the message, its models and the observation are freed
        once answered instead of held by the loop while it waits."""
        limit = self.server.settings.max_request_bytes
        if len(raw) > limit:
            await self.socket.send_text(error_text(RequestTooLarge(f"message over {limit} bytes")))
            await self.socket.close(code=WS_TOO_BIG)
            return None
        try:
            message = json_loads(raw)
        except ServeError as exc:
            return error_text(exc)
        kind = message.get("type", "") if isinstance(message, dict) else ""
        try:
            if kind == "reset":
                reply: Any = WSObservationResponse(data=wire_result(await self._reset(message)))
            elif kind == "step":
                action = SpadeAction.model_validate(WSStepMessage.model_validate(message).data)
                if self.session is None:
                    raise EpisodeStateError("step before reset: send a reset first")
                reply = WSObservationResponse(data=wire_result(await self.server.manager.step(self.session, action.message)))
            elif kind == "state":
                state = self.session.state() if self.session is not None else SpadeState()
                reply = WSStateResponse(data=state.model_dump())
            elif kind == "close":
                return None
            else:
                raise Coded(WSErrorCode.UNKNOWN_TYPE.value, f"Unknown message type: {kind!r}")
            return str(reply.model_dump_json())
        except ValidationError as exc:
            return error_text(invalid(exc, f"{kind or 'message'}"))
        except ServeError as exc:
            if self.session is not None and self.session.closed:
                self.session, self.owned = None, True  # ended with its worker; a reset opens a fresh one
            return error_text(exc)

    async def _reset(self, message: dict[str, Any]) -> Any:
        data = dict(WSResetMessage.model_validate(message).data)
        named = data.pop("env_id", None)
        reset = reset_request(data)
        server, session = self.server, self.session
        if session is not None and named is not None and server.catalog.get(named).id != session.env.id:
            if not self.owned:
                raise InvalidRequest(f"this connection plays session {session.id} of {session.env.id}, not {named}")
            await server.manager.close(session)
            self.session = session = None
        task, target = await server.reset_target(session, reset, self.client, self.env_ref, named)
        if session is None:
            self.session = session = await self._open(target)
        # a task at another knob setting switches the session, attached (an MCP session,
        # openenv's MCP client) or not, keeping its id
        return await server.reset(session, reset, task, target)


def json_loads(raw: str) -> Any:
    """A message's JSON, read with :mod:`spade_serve.json_input`'s bounds (OpenEnv's
    ``INVALID_JSON`` otherwise)."""
    try:
        return json_input.loads(raw)
    except json_input.MalformedJson as exc:
        raise Coded(WSErrorCode.INVALID_JSON.value, f"Invalid JSON: {exc}") from None


async def ws_root(websocket: WebSocket) -> None:
    await Connection(websocket, None).run()


async def ws_env(websocket: WebSocket) -> None:
    await Connection(websocket, websocket.path_params["env_id"]).run()


def register(app: FastAPI) -> None:
    app.router.routes.append(WebSocketRoute("/ws", ws_root))
    app.router.routes.append(WebSocketRoute("/envs/{env_id}/ws", ws_env))


__all__ = ["Connection", "register"]
