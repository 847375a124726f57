"""Reading an HTTP answer from a server the caller does not control.

A client that reads a whole answer into memory lets its server decide how much memory it
uses (an answer of 300 MB held about 1 GB), and a per-read timeout lets a server that
trickles a byte at a time hold it for ever. :func:`read_capped` reads a *streamed* answer
(``httpx``'s ``client.stream(...)``, or anything with ``headers`` and ``iter_raw()``) and
stops at a byte limit and, optionally, at a deadline checked between chunks.
:func:`bound_by_deadlines` and :func:`request_deadline` make the deadline bound every socket
operation of a request (connecting, sending, each read of the headers and the body), which
an HTTP client's per-read timeout does not: a server trickling its headers a line at a
time holds a request only until its deadline.

The limit counts decoded bytes: gzip and deflate answers are inflated here, a bounded
amount at a time, so a small compressed answer cannot expand past the limit either.
Callers ask for ``Accept-Encoding: identity`` (:data:`IDENTITY`); any other encoding is
refused by name. This module imports no HTTP library: ``httpcore`` (httpx's transport)
is imported by the deadline wrappers when a request uses them.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol

from ..errors import SpadeError

__all__ = [
    "IDENTITY",
    "AnswerTooLarge",
    "AnswerTooSlow",
    "StreamedAnswer",
    "bound_by_deadlines",
    "read_capped",
    "request_deadline",
]

#: The request header a capped reader sends: the answer's bytes are what it counts.
IDENTITY = {"Accept-Encoding": "identity"}


class AnswerTooLarge(SpadeError, ValueError):
    """A server's answer is larger than the caller's limit; reading stopped at the limit."""

    def __init__(self, source: str, limit: int, *, declared: int | None = None) -> None:
        said = f" (it declared {declared:,} bytes)" if declared is not None else ""
        super().__init__(f"{source} answered more than the {limit:,}-byte limit{said}; the answer was not read")
        self.source = source
        self.limit = limit
        self.declared = declared


class AnswerTooSlow(SpadeError, TimeoutError):
    """A server's answer was still arriving at the caller's deadline."""

    def __init__(self, source: str, deadline_s: float, received: int) -> None:
        super().__init__(
            f"{source} was still answering after the {deadline_s:g} s deadline ({received:,} bytes received)"
        )
        self.source = source
        self.deadline_s = deadline_s


class StreamedAnswer(Protocol):
    """What :func:`read_capped` reads (an ``httpx.Response`` opened by ``client.stream``)."""

    @property
    def headers(self) -> Mapping[str, str]: ...

    def iter_raw(self) -> Iterable[bytes]: ...


def read_capped(answer: StreamedAnswer, limit: int, *, source: str, deadline: float | None = None,
                deadline_s: float | None = None) -> bytes:
    """The body of ``answer``, decoded, at most ``limit`` bytes.

    Raises :class:`AnswerTooLarge` as soon as the declared ``Content-Length`` or the bytes
    read pass ``limit`` (nothing past the limit is kept), and :class:`AnswerTooSlow` when a
    chunk arrives after ``deadline`` (a ``time.monotonic()`` value; ``deadline_s`` is how the
    message states it). ``source`` names the server or route in the messages.
    """
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    declared = _content_length(answer.headers.get("content-length"))
    if declared is not None and declared > limit:
        raise AnswerTooLarge(source, limit, declared=declared)
    if getattr(answer, "is_stream_consumed", False):
        # already read by whoever made it (httpx reads a response built from bytes, as a
        # mock transport's are): only the limit is left to check, on the decoded body
        content = bytes(getattr(answer, "content", b""))
        if len(content) > limit:
            raise AnswerTooLarge(source, limit, declared=declared)
        return content
    encoding = (answer.headers.get("content-encoding") or "identity").strip().lower()
    if encoding not in ("identity", "gzip", "deflate"):
        raise SpadeError(f"{source} answered in content encoding {encoding!r}, which this client does not read")
    inflater = None if encoding == "identity" else zlib.decompressobj(wbits=47 if encoding == "gzip" else 15)
    body = bytearray()
    for raw in answer.iter_raw():
        if deadline is not None and time.monotonic() > deadline:
            raise AnswerTooSlow(source, deadline_s if deadline_s is not None else 0.0, len(body))
        if inflater is None:
            chunks = [raw]
        else:
            chunks = []
            data = raw
            while data:  # inflate at most one byte past the limit at a time
                try:
                    chunks.append(inflater.decompress(data, limit - len(body) - sum(map(len, chunks)) + 1))
                except zlib.error as exc:
                    raise SpadeError(f"{source} answered a corrupt {encoding} body: {exc}") from None
                data = inflater.unconsumed_tail
                if sum(map(len, chunks)) + len(body) > limit:
                    raise AnswerTooLarge(source, limit, declared=declared)
        for chunk in chunks:
            if len(body) + len(chunk) > limit:
                raise AnswerTooLarge(source, limit, declared=declared)
            body += chunk
    return bytes(body)


# --- a deadline for a whole request (connect, send, headers, body) -----------------------


#: The deadline (``time.monotonic()``) of the request this thread is sending, if any.
_THREAD = threading.local()


@contextmanager
def request_deadline(deadline: float) -> Iterator[None]:
    """Within the block, every socket operation this thread's requests make through a
    client :func:`bound_by_deadlines` wrapped ends by ``deadline`` (``time.monotonic()``)."""
    previous = getattr(_THREAD, "deadline", None)
    _THREAD.deadline = deadline
    try:
        yield
    finally:
        _THREAD.deadline = previous


def _time_left(timeout: float | None, error: type[Exception]) -> float | None:
    """``timeout`` shortened to what is left of this thread's request deadline; ``error``
    (an httpcore timeout, which httpx reports as its own) once nothing is left."""
    end = getattr(_THREAD, "deadline", None)
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise error("the request's deadline has passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream:
    """An httpcore network stream whose every operation ends by the request's deadline."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        import httpcore

        return self._inner.read(max_bytes, _time_left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        import httpcore

        self._inner.write(buffer, _time_left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        import httpcore

        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, _time_left(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend:
    """httpcore's network backend (its public interface) whose streams end by the deadline
    of the request the calling thread is sending: a server trickling its headers or its
    body a byte at a time is cut at the deadline, which a per-read timeout never does."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> _DeadlineStream:
        import httpcore

        timeout = _time_left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> _DeadlineStream:
        import httpcore

        timeout = _time_left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def bound_by_deadlines(client: Any) -> bool:
    """Wrap the network backend of ``client``'s (an ``httpx.Client``) default connection
    pool in :class:`_DeadlineBackend`, so :func:`request_deadline` bounds its requests.
    httpx does not expose the pool's backend, so this reaches for it and says whether it
    could (an httpx that stores it elsewhere: ``False``; then only :func:`read_capped`'s
    check between chunks applies the deadline)."""
    pool = getattr(getattr(client, "_transport", None), "_pool", None)
    inner = getattr(pool, "_network_backend", None)
    if inner is None or not hasattr(inner, "connect_tcp"):
        return False
    pool._network_backend = _DeadlineBackend(inner)
    return True


def _content_length(value: str | None) -> int | None:
    if value is None:
        return None
    value = value.strip()
    return int(value) if value.isdigit() else None
