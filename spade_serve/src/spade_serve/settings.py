"""The server's limits and options: one validated object, built once by ``spade serve``
(or by a program embedding :func:`spade_serve.app.create_app`) and passed down."""

from __future__ import annotations

import ipaddress

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class ServeSettings(BaseModel):
    """Limits of one server. Every field is checked when the object is built.

    ``host`` defaults to loopback: serving on another interface is an explicit choice
    (and then a ``token`` is strongly advised). ``sessions_per_worker`` is how many
    sessions of one environment and one client share a sandbox worker process (sessions
    of different clients never share one): 1 (the default) gives
    every session its own worker, so a killed worker ends exactly one session; a larger
    value saves memory (one worker holds many instances); a session whose worker another
    session's call killed is then restored on a fresh worker by replaying its episode, and
    one kept waiting longer than ``move_after_s`` by another session's call moves to a
    worker of its own the same way (see :mod:`spade_serve.sessions`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    #: Open sessions in total, and per client address.
    max_sessions: int = Field(1024, ge=1)
    max_sessions_per_client: int = Field(256, ge=1)
    #: A session with no request for this long is closed (its worker freed).
    idle_timeout_s: float = Field(300.0, gt=0)
    #: Environment calls running at once (threads), and calls allowed to wait for one;
    #: past both, a request is answered BUSY at once instead of queueing without bound.
    max_concurrent_calls: int = Field(64, ge=1, le=4096)
    max_queued_calls: int = Field(1024, ge=0)
    #: Largest HTTP request body and WebSocket message, in bytes.
    max_request_bytes: int = Field(1_048_576, ge=1024)
    #: Optional bearer token; when set, every route but /health requires it.
    token: str | None = None
    sessions_per_worker: int = Field(1, ge=1, le=4096)
    #: With shared workers: how long a session waits for its worker while another
    #: session's call runs there before moving to a worker of its own.
    move_after_s: float = Field(0.5, gt=0, le=3600)
    #: Seed environments (trusted plugin code) run in the sandbox like store code unless
    #: this is set; in-process calls cannot be killed, so a hung seed would hold a thread.
    seeds_in_process: bool = False
    #: Wall-clock deadline of one environment call in the sandbox (the worker is killed).
    call_timeout_s: float = Field(10.0, gt=0, le=3600)
    #: Sandbox workers kept warm after their sessions closed.
    max_idle_workers: int = Field(16, ge=0)

    @field_validator("token")
    @classmethod
    def _token_is_usable(cls, value: str | None) -> str | None:
        if value is not None and (len(value) < 8 or any(c.isspace() for c in value)):
            raise ValueError("the bearer token must be at least 8 characters with no whitespace")
        return value

    @model_validator(mode="after")
    def _per_client_within_total(self) -> ServeSettings:
        if self.max_sessions_per_client > self.max_sessions:
            raise ValueError(
                f"max_sessions_per_client ({self.max_sessions_per_client}) is larger than "
                f"max_sessions ({self.max_sessions})"
            )
        return self

    @property
    def loopback_only(self) -> bool:
        """Whether the server listens on a loopback address only."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


__all__ = ["ServeSettings"]
