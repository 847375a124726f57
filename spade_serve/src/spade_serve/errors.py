"""Errors of the server and the client, each with the wire code a client acts on.

Every error a request can end in is a :class:`ServeError`; the app turns it into one
structured answer, ``{"type": "error", "data": {"code", "message", ...}}`` (the shape
openenv-core's WebSocket protocol uses, on HTTP too), never a traceback. The codes
extend openenv-core's ``WSErrorCode`` vocabulary (``CAPACITY_REACHED``,
``EXECUTION_ERROR``, ``VALIDATION_ERROR``...) with the serving ones (``BUSY``,
``SESSION_NOT_FOUND``...). An environment's failure carries the sandbox's own ``kind``
(``timeout``, ``crash``, ``memory``, ``policy``, ``env_code``, ``contract``...) and
whether it ended the session.
"""

from __future__ import annotations

from typing import Any

from spade_core.errors import SpadeError


class ServeError(SpadeError):
    """Base of every serving failure; ``payload()`` is what goes on the wire."""

    code: str = "SESSION_ERROR"
    http_status: int = 400

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def payload(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.details}


class UnknownEnv(ServeError):
    """The request names an environment this server does not serve."""

    code = "UNKNOWN_ENV"
    http_status = 404


class SessionNotFound(ServeError):
    """No open session has this id (never opened, closed, or expired after being idle)."""

    code = "SESSION_NOT_FOUND"
    http_status = 404


class CapacityReached(ServeError):
    """Opening a session would pass the server's or this client's session limit."""

    code = "CAPACITY_REACHED"
    http_status = 429


class ServerBusy(ServeError):
    """Every call slot and queue place is taken: retry later (HTTP ``Retry-After``)."""

    code = "BUSY"
    http_status = 503


class InvalidRequest(ServeError):
    """The request's fields are wrong (the message names each one)."""

    code = "VALIDATION_ERROR"
    http_status = 422


class RequestTooLarge(ServeError):
    """The request body or WebSocket message is over the server's size limit."""

    code = "REQUEST_TOO_LARGE"
    http_status = 413


class Unauthorized(ServeError):
    """The server has a bearer token and the request did not present it."""

    code = "UNAUTHORIZED"
    http_status = 401


class EpisodeStateError(ServeError):
    """``step`` before the first ``reset``, or after the episode ended."""

    code = "EPISODE_STATE"
    http_status = 409


class EnvFailed(ServeError):
    """The session's environment failed. ``kind`` is the sandbox's error kind;
    ``session_closed`` says whether the session ended with it (the worker was killed, or
    the instance was lost): other sessions are not affected either way."""

    code = "EXECUTION_ERROR"
    http_status = 500

    def __init__(self, message: str, *, kind: str, session_closed: bool) -> None:
        super().__init__(message, kind=kind, session_closed=session_closed)
        self.kind = kind
        self.session_closed = session_closed


class RemoteError(SpadeError):
    """Raised by :class:`~spade_serve.client.SpadeEnvClient` for an error answer:
    ``code``, ``kind`` (for environment failures) and the server's message."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = dict(data)
        self.code = str(data.get("code", "UNKNOWN"))
        self.kind: str | None = data.get("kind")
        self.message = str(data.get("message", "unknown error"))
        where = f" [{self.kind}]" if self.kind else ""
        super().__init__(f"{self.code}{where}: {self.message}")


__all__ = [
    "CapacityReached",
    "EnvFailed",
    "EpisodeStateError",
    "InvalidRequest",
    "RemoteError",
    "RequestTooLarge",
    "ServeError",
    "ServerBusy",
    "SessionNotFound",
    "Unauthorized",
    "UnknownEnv",
]
