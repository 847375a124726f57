"""Running the app under uvicorn, and starting a server for tests and benchmarks."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .app import create_app
from .catalog import EnvCatalog
from .env_factory import SandboxEnvFactory
from .sessions import SessionManager
from .settings import ServeSettings

if TYPE_CHECKING:
    from spade_sandbox.launcher import SandboxLauncher


def uvicorn_config(app: Any, settings: ServeSettings, *, log_level: str = "warning") -> Any:
    """uvicorn's configuration for ``app``: the settings' address, WebSocket messages
    capped at ``max_request_bytes`` and sent uncompressed, a bounded graceful shutdown,
    HTTP/1.1 with a connection cap and a request-read deadline
    (:mod:`spade_serve.connections`), and proxy headers read only from ``trust_forwarded``.

    No permessage-deflate: its zlib streams cost every WebSocket session about 50 KiB of
    the server's memory (more than the rest of a session's state in the server process)
    for messages of a few hundred bytes; clients that offer it fall back to plain frames
    (the extension is negotiated).

    uvicorn's own default trusts ``X-Forwarded-For`` from loopback (or from
    ``$FORWARDED_ALLOW_IPS``): any local process could then name itself any client, past
    the per-client session limit and into another client's worker group. Here the peer
    address is the client unless ``trust_forwarded`` names the proxies."""
    import uvicorn

    from .connections import guarded_http_protocol

    trusted = list(settings.trust_forwarded)
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        http=guarded_http_protocol(settings.connection_cap(), settings.read_timeout_s),
        ws_max_size=settings.max_request_bytes,
        ws_per_message_deflate=False,
        proxy_headers=bool(trusted),
        forwarded_allow_ips=trusted or None,
        log_level=log_level,
        timeout_graceful_shutdown=5,
        lifespan="on",
    )


def run(
    catalog: EnvCatalog, settings: ServeSettings, *, launcher: SandboxLauncher | None = None, log_level: str = "info"
) -> None:
    """Serve until SIGINT/SIGTERM; then every session, worker and the zygote are closed.
    ``launcher`` (the ``[spade.sandbox]`` settings loaded at the edge) makes the sessions' pools."""
    import uvicorn

    manager = SessionManager(catalog, settings, factory=SandboxEnvFactory.for_server(settings, launcher))
    uvicorn.Server(uvicorn_config(create_app(manager), settings, log_level=log_level)).run()


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running(manager: SessionManager, *, startup_timeout_s: float = 30.0) -> Iterator[str]:
    """Run ``manager``'s app in a background thread on its settings' host (port 0: a free
    one); yields the base URL and shuts the server down (gracefully) on exit."""
    import uvicorn

    settings = manager.settings
    if settings.port == 0:
        settings = settings.model_copy(update={"port": free_port(settings.host)})
        manager.settings = settings
    server = uvicorn.Server(uvicorn_config(create_app(manager), settings))
    thread = threading.Thread(target=server.run, name="spade-serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the server did not start on {settings.host}:{settings.port}")
        time.sleep(0.01)
    try:
        yield f"http://{settings.host}:{settings.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


__all__ = ["free_port", "run", "running", "uvicorn_config"]
