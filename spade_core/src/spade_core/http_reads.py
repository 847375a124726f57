"""Reading an HTTP answer from a server the caller does not control.

A client that reads a whole answer into memory lets its server decide how much memory it
uses (an answer of 300 MB held about 1 GB), and a per-read timeout lets a server that
trickles a byte at a time hold it for ever. :func:`read_capped` reads a *streamed* answer
(``httpx``'s ``client.stream(...)``, or anything with ``headers`` and ``iter_raw()``) and
stops at a byte limit and, optionally, at a deadline.

The limit counts decoded bytes: gzip and deflate answers are inflated here, a bounded
amount at a time, so a small compressed answer cannot expand past the limit either.
Callers ask for ``Accept-Encoding: identity`` (:data:`IDENTITY`); any other encoding is
refused by name.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterable, Mapping
from typing import Protocol

from .errors import SpadeError

__all__ = ["IDENTITY", "AnswerTooLarge", "AnswerTooSlow", "StreamedAnswer", "read_capped"]

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


def _content_length(value: str | None) -> int | None:
    if value is None:
        return None
    value = value.strip()
    return int(value) if value.isdigit() else None
