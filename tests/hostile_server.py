"""A hostile server on 127.0.0.1, in its own process, for tests of clients that must not
trust the server they talk to: answers far larger than asked for, declared or not, and
answers trickled a byte at a time. Its own memory is not the test process's.

``with hostile_server(kind="http", size=64 << 20) as url: ...`` (``kind="ws"``: a
WebSocket server that answers every message with one text message of ``size`` bytes;
``kind="pages"``: a ``GET /envs`` listing that never ends, :func:`_serve_pages`).
Run as a script, it serves the JSON options of its first argument and prints its port.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def hostile_server(**options: Any) -> Iterator[str]:
    """Start the server with ``options`` (see :func:`_serve_http`, :func:`_serve_ws`);
    yields its base URL (``http://`` or ``ws://``)."""
    proc = subprocess.Popen([sys.executable, __file__, json.dumps(options)], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line.strip().isdigit():
            raise RuntimeError(f"the hostile server did not start (it printed {line!r})")
        scheme = "ws" if options.get("kind") == "ws" else "http"
        yield f"{scheme}://127.0.0.1:{int(line)}"
    finally:
        proc.kill()
        proc.wait(10)


def _serve_http(size: int, declare: bool = True, declared: int | None = None, chunk: int = 65536,
                delay_s: float = 0.0, status: int = 200, header_lines: int = 0, **_: Any) -> None:
    """Answer every GET and POST with ``size`` bytes of JSON-looking filler, ``chunk`` bytes
    a write, ``delay_s`` apart; ``Content-Length`` is ``declared`` (default ``size``) when
    ``declare``, else the answer runs until the connection closes. ``header_lines``: that
    many filler headers first, one a write, ``delay_s`` apart (headers trickled)."""
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    filler = b"[" + b"0," * (chunk // 2)
    filler = filler[:chunk]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, *args: Any) -> None:
            pass

        def answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            self.send_response(status)
            self.flush_headers()  # the status line goes out first, then the trickle
            try:
                for i in range(header_lines):
                    self.wfile.write(f"X-Filler-{i}: x\r\n".encode())
                    self.wfile.flush()
                    time.sleep(delay_s)
            except (BrokenPipeError, ConnectionResetError):
                return
            self.send_header("Content-Type", "application/json")
            if declare:
                self.send_header("Content-Length", str(declared if declared is not None else size))
            self.end_headers()
            sent = 0
            try:
                while sent < size:
                    piece = filler[: min(chunk, size - sent)]
                    self.wfile.write(piece)
                    self.wfile.flush()
                    sent += len(piece)
                    if delay_s:
                        time.sleep(delay_s)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading: what it should do

        do_GET = do_POST = answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


def _serve_ws(size: int, **_: Any) -> None:
    """Answer every WebSocket message with one text message of ``size`` bytes."""
    import asyncio

    from websockets.asyncio.server import serve

    payload = "x" * size

    async def handler(ws: Any) -> None:
        async for _message in ws:
            await ws.send(payload)

    async def main() -> None:
        async with serve(handler, "127.0.0.1", 0, max_size=None) as server:
            print(server.sockets[0].getsockname()[1], flush=True)
            await asyncio.Future()

    asyncio.run(main())


def _serve_pages(page_bytes: int = 1000, delay_s: float = 0.0, **_: Any) -> None:
    """A ``spade serve`` listing without end: every ``GET /envs`` answers one well-formed
    page (one row, padded to about ``page_bytes``) whose ``next`` is a cursor never answered
    before, ``delay_s`` after the request; ``GET /envs/<id>`` answers that row. Each page is
    small and prompt enough for a per-request limit: only bounds on the whole listing end it."""
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    served = [0]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            time.sleep(delay_s)
            served[0] += 1
            row = {"id": "filler-v1", "kind": "store", "name": "filler", "version": 1, "domain": "games",
                   "skill": "filler", "description": "x" * page_bytes, "max_turns": 3, "action_format": "boxed",
                   "reward_range": [0.0, 1.0]}
            body = row if self.path.startswith("/envs/") else {"envs": [row], "whole_registry": True,
                                                                  "next": f"page-{served[0]}"}
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    opts = json.loads(sys.argv[1])
    {"ws": _serve_ws, "pages": _serve_pages}.get(opts.get("kind"), _serve_http)(**opts)
