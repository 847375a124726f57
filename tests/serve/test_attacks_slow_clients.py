"""Unfinished requests are dropped within a few seconds, however their bytes are trickled:
the whole request (headers and body together) must arrive within the read deadline of the
connection opening (or of the previous answer on it), and a request answered before its
body was read (a refused token, a body too large) gets no new deadline for that body.

Before, headers and body each had a deadline of their own (10 s each by default) and an
early answer started the body's again, so a client trickling headers and then a body kept
hundreds of requests open for about 20 s, on a server with a token it never sent too.
Real sockets against the server as ``spade serve`` runs it (uvicorn, the guarded h11
protocol, default settings but the port).
"""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest
from spade_serve.settings import ServeSettings

from .conftest import Serve

#: Sockets a slow client holds (the red team held 270).
SOCKETS = 270
#: Seconds a client spends trickling headers before it finishes them and trickles a body.
HEADERS_FOR = 3.0


def _open(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(f"POST /reset HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
    return s


def _hold(socks: list[socket.socket], started: float, closed_at: dict[int, float], stop: threading.Event) -> None:
    """Trickle: a header line each 0.25 s for :data:`HEADERS_FOR` s, then the end of the
    headers (a body of 100,000 bytes declared) and a body byte each 0.25 s; note when the
    server closes each socket."""
    ended = False
    while not stop.is_set() and len(closed_at) < len(socks):
        now = time.monotonic()
        if not ended and now - started > HEADERS_FOR:
            piece, ended = b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", True
        else:
            piece = b" " if ended else b"X-More: 1\r\n"
        for i, s in enumerate(socks):
            if i in closed_at:
                continue
            try:
                s.sendall(piece)
                s.setblocking(False)
                try:
                    if s.recv(65536) == b"":
                        closed_at[i] = now - started
                except BlockingIOError:
                    pass
                finally:
                    s.setblocking(True)
            except OSError:
                closed_at[i] = now - started
        stop.wait(0.25)


def _held_for(port: int, within: float) -> dict[int, float]:
    started = time.monotonic()
    socks = [_open(port) for _ in range(SOCKETS)]
    closed_at: dict[int, float] = {}
    stop = threading.Event()
    holder = threading.Thread(target=_hold, args=(socks, started, closed_at, stop), daemon=True)
    holder.start()
    holder.join(within)
    stop.set()
    holder.join()
    for s in socks:
        s.close()
    return closed_at


@pytest.mark.parametrize("token", [None, "a-token-the-slow-client-lacks"])
def test_unfinished_requests_are_dropped_within_the_read_deadline(serve: Serve, token: str | None) -> None:
    deadline = ServeSettings().read_timeout_s
    assert deadline <= 5.0  # "a few seconds": the default itself
    with serve(token=token) as (url, manager):
        closed_at = _held_for(int(url.rsplit(":", 1)[1]), within=deadline + 4.0)
        still_open = SOCKETS - len(closed_at)
        assert still_open == 0, f"{still_open} of {SOCKETS} unfinished requests still open after {deadline + 4.0:g} s"
        assert max(closed_at.values()) < deadline + 2.0, sorted(closed_at.values())[-5:]
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        assert httpx.get(f"{url}/health", timeout=5).status_code == 200
        assert httpx.post(f"{url}/reset", json={"seed": 1}, headers=headers, timeout=30).status_code == 200


def test_a_body_sent_at_a_steady_pace_within_the_deadline_is_read(serve: Serve) -> None:
    """The deadline bounds the whole request, not its pace: a body that arrives in pieces
    within it is answered."""
    with serve(read_timeout_s=2.0) as (url, _):
        port = int(url.rsplit(":", 1)[1])
        body = b'{"seed": 1}'
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(f"POST /reset HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                  f"Content-Length: {len(body)}\r\n\r\n".encode())
        for byte in body:
            time.sleep(0.1)
            s.sendall(bytes([byte]))
        s.settimeout(30)
        assert s.recv(4096).startswith(b"HTTP/1.1 200")
        s.close()
