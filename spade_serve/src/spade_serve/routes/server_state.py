"""What every route reads (:class:`ServerState`, one per app at ``app.state.server``) and
the helpers they share: naming an environment, a session or a task from a request, reading
a JSON body, answering an error."""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Any

from fastapi import Request, WebSocket
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from .. import json_input, listing
from ..catalog import EnvCatalog, ServedEnv
from ..errors import InvalidRequest, ServeError, UnknownEnv
from ..mcp_tools import McpEndpoint
from ..models import SpadeObservation
from ..session import Session, check_seed
from ..sessions import SessionManager
from ..settings import ServeSettings
from ..tasks import Task, TaskCatalog
from ..wire import ResetRequest

#: The header naming a plain-HTTP session (and answering the id a reset opened).
SESSION_HEADER = "X-Spade-Session"


class ServerState:
    """One server's routes' view of it: the sessions, the environments, the Task API (one
    budget of what is kept with the catalog's, :mod:`spade_serve.kept`), the key listing
    cursors are signed with, and the MCP endpoint."""

    def __init__(self, manager: SessionManager) -> None:
        self.manager = manager
        self.tasks = TaskCatalog(kept=manager.catalog.kept)
        secret = manager.settings.cursor_secret
        self.cursor_key = listing.cursor_key(secret.get_secret_value() if secret is not None else None)
        self.mcp = McpEndpoint(manager, self.env_for, self.tasks)

    @property
    def catalog(self) -> EnvCatalog:
        return self.manager.catalog

    @property
    def settings(self) -> ServeSettings:
        return self.manager.settings

    def authorized(self, headers: Mapping[str, str]) -> bool:
        """Whether a request carries the server's bearer token (always, without one)."""
        token = self.settings.token
        if token is None:
            return True
        scheme, _, value = headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode())

    def env_for(self, env_ref: str | None, named: Any = None) -> ServedEnv:
        """The environment of a route (``/envs/<env_ref>/...``) or named in a body; the only
        one served when neither names one."""
        ref = env_ref or named
        if ref is not None:
            if not isinstance(ref, str):
                raise InvalidRequest(f"env_id must be a string, got {type(ref).__name__}")
            return self.catalog.get(ref)
        default = self.catalog.default
        if default is None:
            raise UnknownEnv(
                "this server serves several environments: use /envs/<env_id>/... or name env_id in the reset"
            )
        return default

    def check_session_env(self, session: Session, env_ref: str | None) -> None:
        """:class:`InvalidRequest` when the route names another environment than the session's."""
        if env_ref is not None and self.catalog.get(env_ref).id != session.env.id:
            raise InvalidRequest(f"session {session.id} is a session of {session.env.id}, not of {env_ref}")

    def session_for(self, request: Request, body: dict[str, Any], env_ref: str | None) -> Session:
        """The session a plain-HTTP request names (a ``session_id`` field, the
        ``X-Spade-Session`` header or a ``session_id`` query parameter)."""
        sid = body.pop("session_id", None) or request.headers.get(SESSION_HEADER) or request.query_params.get("session_id")
        if not sid:
            raise InvalidRequest(
                f"no session: send the id /reset answered ({SESSION_HEADER} header or a session_id field)"
            )
        if not isinstance(sid, str):
            raise InvalidRequest(f"session_id must be a string, got {type(sid).__name__}")
        session = self.manager.get(sid)
        self.check_session_env(session, env_ref)
        return session

    async def reset_target(
        self, session: Session | None, reset: ResetRequest, client: str, env_ref: str | None, named: Any = None
    ) -> tuple[Task | None, ServedEnv]:
        """The task a reset names (``split`` and ``index``; ``None``: none) and the
        environment that plays it: the session's, else the route's. A reset that will open
        a session checks the client's room first, before anything is resolved or made."""
        if session is None:
            self.manager.check_room(client)
        base = self.catalog.get(session.env.id) if session is not None else self.env_for(env_ref, named)
        extra = reset.model_extra or {}
        if "split" not in extra and "index" not in extra:
            return None, base
        return await self.manager.gate.run(self.tasks.resolve, base, extra.get("split"), extra.get("index"), reset.seed)

    async def reset(self, session: Session, reset: ResetRequest, task: Task | None, target: ServedEnv) -> SpadeObservation:
        """Reset ``session`` as asked: at the task's seed and knob setting (a task at another
        setting than the session's switches it, keeping its id), else at the reset's seed."""
        if task is None:
            return await self.manager.reset(session, reset.seed, reset.episode_id)
        return await self.manager.reset(session, task.seed, reset.episode_id, env=target)


def server_of(conn: Request | WebSocket) -> ServerState:
    """The :class:`ServerState` of the app a request or socket reached."""
    state: ServerState = conn.app.state.server
    return state


def client_of(conn: Request | WebSocket) -> str:
    return conn.client.host if conn.client is not None else "unknown"


async def json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object (``{}`` for an empty body), read with
    :mod:`spade_serve.json_input`'s bounds."""
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


def error_body(data: dict[str, Any]) -> dict[str, Any]:
    return {"type": "error", "data": data}


def error_response(exc: ServeError) -> JSONResponse:
    headers = {"Retry-After": "1"} if exc.http_status == 503 else None
    return JSONResponse(error_body(exc.payload()), status_code=exc.http_status, headers=headers)


def invalid(exc: ValidationError, what: str) -> InvalidRequest:
    """A pydantic validation failure as the server's :class:`InvalidRequest`, naming each field."""
    first = "; ".join(f"{'.'.join(map(str, e['loc'])) or what}: {e['msg']}" for e in exc.errors()[:5])
    details = [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors()]
    return InvalidRequest(f"invalid {what}: {first}", errors=details)


def reset_request(data: dict[str, Any]) -> ResetRequest:
    """The reset's fields (seed >= 0, episode_id, and a task's split and index); any other
    field is named as unknown (a SPADE environment takes no other reset arguments)."""
    try:
        reset = ResetRequest.model_validate(data)
    except ValidationError as exc:
        raise invalid(exc, "reset request") from None
    check_seed(reset.seed)
    unknown = sorted(set(data) - {"seed", "episode_id", "split", "index"})
    if unknown:
        raise InvalidRequest(
            f"unknown reset field(s): {', '.join(map(str, unknown))} (a reset takes seed, episode_id, env_id, split, index)"
        )
    return reset


__all__ = ["SESSION_HEADER", "ServerState", "client_of", "error_body", "error_response", "invalid", "json_body",
           "reset_request", "server_of"]
