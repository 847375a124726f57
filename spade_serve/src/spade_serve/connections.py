"""The server's HTTP connections: a cap on how many are open, and a deadline for reading
each request, so that clients that open sockets and never finish a request (slow headers,
a body sent a byte at a time) cannot hold the server's descriptors and leave
``/health`` (or anyone) unanswered.

uvicorn has neither: ``timeout_keep_alive`` stops as soon as a byte arrives, and
``limit_concurrency`` answers *every* request 503 once reached (``/health`` included), so
it is a switch, not a bound. :func:`guarded_http_protocol` is uvicorn's h11 protocol
(uvicorn's own pure-Python HTTP/1.1 parser, its default without httptools) with both:

* **read deadline**: a whole request, headers and body, must have arrived
  ``read_timeout_s`` after the connection opened (or after the previous answer on a
  kept-alive connection), however slowly it trickles in. Past it the connection is closed
  (a request already passed to the app sees the client leave). One deadline for both: with
  a deadline of its own for the body, a client that finished its headers just in time held
  the connection twice as long. An answer sent before the body was read (a missing token,
  a body over the limit) starts no new deadline: the body's is the request's.
* **connection cap**: past ``max_connections`` open connections (HTTP and WebSocket
  alike) a new one first makes room by closing the connection that has waited longest
  for its request's headers (then: for its body); a connection with a request being
  answered, or a WebSocket, is never closed for this. When there is none to close, the
  new connection is answered ``503 BUSY`` and closed.

So a flood of unfinished requests costs each of them at most ``read_timeout_s``, and
never more than the cap in descriptors; a client whose request is complete is answered.
"""

from __future__ import annotations

import time
from typing import Any

#: What a connection refused at the cap is answered.
_BUSY_BODY = (
    b'{"type": "error", "data": {"code": "BUSY", "message": "the server has its most connections open '
    b'(max_connections); retry shortly"}}'
)
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: close\r\n"
    b"retry-after: 1\r\ncontent-length: " + str(len(_BUSY_BODY)).encode() + b"\r\n\r\n" + _BUSY_BODY
)


def guarded_http_protocol(max_connections: int, read_timeout_s: float) -> type:
    """uvicorn's h11 protocol class with a connection cap and a request-read deadline
    (see the module docstring); pass it as ``uvicorn.Config(http=...)``."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    waiting = (h11.IDLE, h11.SEND_BODY)

    class GuardedH11Protocol(H11Protocol):  # type: ignore[misc]
        cap = max_connections
        read_timeout = read_timeout_s

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            self._deadline: Any = None
            self._since = time.monotonic()
            self._dropped = False
            self._upgraded = False
            super().connection_made(transport)
            if len(self.connections) > self.cap and self._open_count() > self.cap and not self._make_room():
                self._dropped = True
                transport.write(_BUSY)
                transport.close()
                return
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._follow()

        def handle_websocket_upgrade(self, event: Any) -> None:
            # The WebSocket protocol owns the connection (and its transport) from here on;
            # h11 still says SEND_BODY (the upgrade request's end was never pulled).
            self._upgraded = True
            self._cancel()
            super().handle_websocket_upgrade(event)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._arm()  # the next request's: its own deadline
            else:
                self._follow()  # a body still coming keeps its request's deadline

        # --- the deadline -----------------------------------------------------------
        def _arm(self) -> None:
            """Start a request's deadline: a request begins (its first byte may come later)."""
            self._cancel()
            if self._upgraded:
                return
            self._since = time.monotonic()
            self._deadline = self.loop.call_later(self.read_timeout, self._read_timed_out)

        def _cancel(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _follow(self) -> None:
            """After bytes arrived: the headers are in (the body is awaited, under the same
            deadline), the whole request is (no deadline until the answer), or nothing
            changed."""
            if self._upgraded:
                return
            state = self.conn.their_state
            if state not in waiting:
                self._cancel()

        def _read_timed_out(self) -> None:
            self._deadline = None
            if not self._upgraded and not self.transport.is_closing() and self.conn.their_state in waiting:
                self._drop()

        # --- the cap ----------------------------------------------------------------
        def _drop(self) -> None:
            self._dropped = True
            self._cancel()
            self.transport.close()

        def _open_count(self) -> int:
            return sum(1 for c in self.connections if not getattr(c, "_dropped", False))

        def _make_room(self) -> bool:
            """Close the connection waiting longest for its request's headers (else for its
            body); whether there was one."""
            best: tuple[tuple[int, float], Any] | None = None
            for conn in self.connections:
                if conn is self or not isinstance(conn, GuardedH11Protocol) or conn._dropped or conn._upgraded:
                    continue
                state = conn.conn.their_state
                if state not in waiting or (state is h11.IDLE and conn.cycle is not None and not conn.cycle.response_complete):
                    continue
                key = (0 if state is h11.IDLE else 1, conn._since)
                if best is None or key < best[0]:
                    best = (key, conn)
            if best is None:
                return False
            best[1]._drop()
            return True

    return GuardedH11Protocol


__all__ = ["guarded_http_protocol"]
