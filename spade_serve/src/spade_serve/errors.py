"""Errors of the server and the client, each with the wire code a client acts on.

Every error a request can end in is a :class:`ServeError`; the app turns it into one
structured answer, ``{"type": "error", "data": {"code", "message", ...}}`` (the shape
OpenEnv's WebSocket protocol uses, on HTTP too), never a traceback. The codes
extend OpenEnv's ``WSErrorCode`` vocabulary (``CAPACITY_REACHED``,
``EXECUTION_ERROR``, ``VALIDATION_ERROR``...) with the serving ones (``BUSY``,
``SESSION_NOT_FOUND``...). An environment's failure carries the sandbox's own ``kind``
(``timeout``, ``crash``, ``memory``, ``policy``, ``env_code``, ``contract``...) and
whether it ended the session.
"""

from __future__ import annotations

from typing import Any

from spade_core.errors import SpadeError


class ServeError(SpadeError):
    """Base of every serving failure; ``payload()`` is what goes on the wire.

    A subclass states its wire code and HTTP status in its class line,
    ``class UnknownEnv(ServeError, code="UNKNOWN_ENV", http_status=404)``, and says in its
    docstring when it is raised; :data:`ERRORS_BY_CODE` maps each code to its class (a
    code is declared once). A subclass without ``code`` inherits its parent's, or sets one
    per instance."""

    code: str = "SESSION_ERROR"
    http_status: int = 400

    def __init_subclass__(cls, *, code: str | None = None, http_status: int | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if http_status is not None:
            cls.http_status = http_status
        if code is None:  # a variant that sets its code per instance, or inherits its parent's
            return
        if code in ERRORS_BY_CODE:
            raise TypeError(f"{cls.__name__}: wire code {code!r} is already {ERRORS_BY_CODE[code].__name__}'s")
        cls.code = code
        ERRORS_BY_CODE[code] = cls

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def payload(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.details}


#: Wire code -> the error class that answers with it (every subclass of :class:`ServeError`).
ERRORS_BY_CODE: dict[str, type[ServeError]] = {ServeError.code: ServeError}


class UnknownEnv(ServeError, code="UNKNOWN_ENV", http_status=404):
    """The request names an environment this server does not serve."""


class SessionNotFound(ServeError, code="SESSION_NOT_FOUND", http_status=404):
    """No open session has this id (never opened, closed, or expired after being idle)."""


class CapacityReached(ServeError, code="CAPACITY_REACHED", http_status=429):
    """Opening a session would pass the server's or this client's session limit."""


class ServerBusy(ServeError, code="BUSY", http_status=503):
    """Every call slot and queue place is taken: retry later (HTTP ``Retry-After``)."""


class InvalidRequest(ServeError, code="VALIDATION_ERROR", http_status=422):
    """The request's fields are wrong (the message names each one)."""


class RequestTooLarge(ServeError, code="REQUEST_TOO_LARGE", http_status=413):
    """The request body or WebSocket message is over the server's size limit."""


class Unauthorized(ServeError, code="UNAUTHORIZED", http_status=401):
    """The server has a bearer token and the request did not present it."""


class Forbidden(ServeError, code="FORBIDDEN", http_status=403):
    """The request's ``Host`` is not one this server answers to, or it comes from a web
    page of an origin that may not call it (:mod:`spade_serve.access`)."""


class UnsupportedMediaType(ServeError, code="UNSUPPORTED_MEDIA_TYPE", http_status=415):
    """A request body that is not ``Content-Type: application/json``."""


class EpisodeStateError(ServeError, code="EPISODE_STATE", http_status=409):
    """``step`` before the first ``reset``, or after the episode ended."""


class EnvFailed(ServeError, code="EXECUTION_ERROR", http_status=500):
    """The session's environment failed. ``kind`` is the sandbox's error kind;
    ``session_closed`` says whether the session ended with it (the worker was killed, or
    the instance was lost): other sessions are not affected either way."""

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
    "ERRORS_BY_CODE",
    "CapacityReached",
    "EnvFailed",
    "EpisodeStateError",
    "Forbidden",
    "InvalidRequest",
    "RemoteError",
    "RequestTooLarge",
    "ServeError",
    "ServerBusy",
    "SessionNotFound",
    "Unauthorized",
    "UnknownEnv",
    "UnsupportedMediaType",
]
