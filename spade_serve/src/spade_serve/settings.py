"""The server's limits and options: one validated object, built once by ``spade serve``
(or by a program embedding :func:`spade_serve.app.create_app`) and passed down."""

from __future__ import annotations

import ipaddress

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator


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
    worker of its own the same way (see :mod:`spade_serve.sessions`). What such a replay
    may cost is bounded: an episode's replay log holds at most ``max_replay_steps``
    actions and ``max_replay_bytes`` bytes (past either the episode is kept no longer and
    a restore ends the session instead), and a session is restored or moved at most
    ``max_restores`` times per episode.

    Who may talk to the server (docs/serving.md, "Security"): a request's ``Host`` must be
    one this server answers to (``allow_hosts`` adds names), an ``Origin``, when sent, one
    of its own or ``allow_origins``; ``X-Forwarded-For`` is read only from the proxies of
    ``trust_forwarded``. Connections are capped at ``max_connections`` (default: from the
    process's open-file limit), and a whole request must be read within ``read_timeout_s``.
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
    #: The secret ``GET /envs`` cursors are signed from (:func:`spade_serve.listing.cursor_key`):
    #: give replicas behind one address the same one so that they take each other's
    #: cursors. ``None``: a random key made at each start (a cursor holds on that server only).
    cursor_secret: SecretStr | None = Field(None, min_length=32)
    sessions_per_worker: int = Field(1, ge=1, le=4096)
    #: With shared workers: how long a session waits for its worker while another
    #: session's call runs there before moving to a worker of its own.
    move_after_s: float = Field(0.5, gt=0, le=3600)
    #: Seed environments (plugin code) run in the sandbox like store code unless this is
    #: set; then they are trusted: each runs in a worker of a trusted pool (its plugin's
    #: modules importable, none of the confinement), under the same call deadline
    #: (:mod:`spade_serve.env_factory`). The name is the option's of old, when they ran in
    #: the server's process.
    seeds_in_process: bool = False
    #: Wall-clock deadline of one environment call in the sandbox (the worker is killed);
    #: ``None``: ``[spade.sandbox]``'s ``call_timeout_s``.
    call_timeout_s: float | None = Field(None, gt=0, le=3600)
    #: Sandbox workers kept warm after their sessions closed.
    max_idle_workers: int = Field(16, ge=0)
    #: With shared workers: the most actions, and bytes of actions (UTF-8), an episode's
    #: replay log holds; past either the log is dropped and the session, should its worker
    #: be lost, ends instead of being replayed.
    max_replay_steps: int = Field(256, ge=1, le=100_000)
    max_replay_bytes: int = Field(65_536, ge=1024)
    #: With shared workers: restores (and moves) of one session per episode; past them the
    #: session ends instead of being replayed again.
    max_restores: int = Field(3, ge=0, le=1000)
    #: Open connections (HTTP and WebSocket). ``None``: half of the process's open-file
    #: limit less a reserve, at most ``max_sessions + 1024`` (:meth:`connection_cap`).
    max_connections: int | None = Field(None, ge=8)
    #: A whole request, headers and body, must arrive within this many seconds of its
    #: connection opening (or of the previous answer on it); else the connection is closed.
    read_timeout_s: float = Field(5.0, gt=0, le=3600)
    #: ``Host`` names (``name`` or ``name:port``; ``*``: any) answered besides this
    #: server's own (docs/serving.md).
    allow_hosts: tuple[str, ...] = ()
    #: Web origins (``scheme://host[:port]``; ``*``: any) whose pages may call the server
    #: besides its own.
    allow_origins: tuple[str, ...] = ()
    #: Proxy addresses or networks (``*``: any) whose ``X-Forwarded-For`` /
    #: ``X-Forwarded-Proto`` name the client; none by default: the peer address is the client.
    trust_forwarded: tuple[str, ...] = ()

    @field_validator("token")
    @classmethod
    def _token_is_usable(cls, value: str | None) -> str | None:
        if value is not None and (len(value) < 8 or any(c.isspace() for c in value)):
            raise ValueError("the bearer token must be at least 8 characters with no whitespace")
        return value

    @field_validator("allow_hosts")
    @classmethod
    def _hosts_are_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from .access import parse_host

        for entry in value:
            if entry != "*" and parse_host(entry) is None:
                raise ValueError(f"allow_hosts: {entry!r} is not a host name, address or name:port")
        return value

    @field_validator("allow_origins")
    @classmethod
    def _origins_are_origins(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from .access import parse_origin

        for entry in value:
            if entry != "*" and parse_origin(entry) is None:
                raise ValueError(f"allow_origins: {entry!r} is not an origin (scheme://host[:port], http or https)")
        return value

    @field_validator("trust_forwarded")
    @classmethod
    def _proxies_are_addresses(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            if entry == "*":
                continue
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"trust_forwarded: {entry!r} is not an address or network (or '*')") from None
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

    def connection_cap(self) -> int:
        """``max_connections``, or when unset: half of what this process's open-file limit
        leaves after a reserve of 128 (sandbox worker links, the store, logs), at least 64
        and at most ``max_sessions + 1024``."""
        if self.max_connections is not None:
            return self.max_connections
        try:
            import resource

            soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            if soft == resource.RLIM_INFINITY or soft <= 0:
                soft = 1 << 20
        except (ImportError, OSError, ValueError):
            soft = 1024
        return max(64, min((soft - 128) // 2, self.max_sessions + 1024))


__all__ = ["ServeSettings"]
