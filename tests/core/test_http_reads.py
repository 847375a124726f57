"""``read_capped``: an answer's body within a byte limit, whatever its encoding."""

from __future__ import annotations

import gzip
import time
import zlib
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from spade_core.app.http_reads import AnswerTooLarge, AnswerTooSlow, read_capped
from spade_core.errors import SpadeError


class Answer:
    """An answer as a streaming HTTP client hands it over: headers, then raw chunks."""

    def __init__(self, raw: bytes, *, encoding: str | None = None, length: int | None = None, chunk: int = 1000,
                 delay_s: float = 0.0) -> None:
        self.headers = {}
        if encoding:
            self.headers["content-encoding"] = encoding
        if length is not None:
            self.headers["content-length"] = str(length)
        self._raw, self._chunk, self._delay_s = raw, chunk, delay_s

    def iter_raw(self) -> Iterator[bytes]:
        for i in range(0, len(self._raw), self._chunk):
            time.sleep(self._delay_s)
            yield self._raw[i : i + self._chunk]


ENCODE = {"identity": lambda b: b, "gzip": gzip.compress, "deflate": zlib.compress}


@settings(deadline=None)
@given(st.binary(max_size=5000), st.integers(0, 6000), st.sampled_from(sorted(ENCODE)), st.integers(1, 700))
def test_a_body_within_the_limit_is_read_whole_and_one_over_it_is_refused(body: bytes, limit: int, encoding: str,
                                                                          chunk: int) -> None:
    answer = Answer(ENCODE[encoding](body), encoding=encoding, chunk=chunk)
    if len(body) <= limit:
        assert read_capped(answer, limit, source="s") == body
    else:
        with pytest.raises(AnswerTooLarge, match=f"s answered more than the {limit:,}-byte limit"):
            read_capped(answer, limit, source="s")


def test_a_compressed_bomb_is_refused_at_the_limit_not_inflated() -> None:
    import tracemalloc

    bomb = gzip.compress(bytes(256 << 20))  # 256 MiB of zeros in about 250 KiB
    tracemalloc.start()
    try:
        with pytest.raises(AnswerTooLarge):
            read_capped(Answer(bomb, encoding="gzip", chunk=65536), 1 << 20, source="s")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20


def test_a_declared_length_over_the_limit_is_refused_before_reading() -> None:
    with pytest.raises(AnswerTooLarge, match=r"it declared 300,000,000 bytes"):
        read_capped(Answer(b"", length=300_000_000), 1000, source="s")


def test_a_chunk_after_the_deadline_stops_the_read() -> None:
    answer = Answer(b"x" * 50, chunk=1, delay_s=0.02)
    with pytest.raises(AnswerTooSlow, match=r"s was still answering after the 0.2 s deadline"):
        read_capped(answer, 1000, source="s", deadline=time.monotonic() + 0.2, deadline_s=0.2)


def test_an_encoding_it_does_not_read_is_named() -> None:
    with pytest.raises(SpadeError, match="content encoding 'br'"):
        read_capped(Answer(b"x", encoding="br"), 1000, source="s")


def test_an_answer_read_before_it_was_handed_over_is_checked_against_the_limit() -> None:
    httpx = pytest.importorskip("httpx")
    ready = httpx.Response(200, content=b"x" * 100)  # httpx reads a response built from bytes
    assert ready.is_stream_consumed
    assert read_capped(ready, 100, source="s") == b"x" * 100
    with pytest.raises(AnswerTooLarge, match="more than the 99-byte limit"):
        read_capped(ready, 99, source="s")


def test_a_request_deadline_bounds_headers_trickled_a_line_at_a_time() -> None:
    httpx = pytest.importorskip("httpx")
    from hostile_server import hostile_server
    from spade_core.app.http_reads import bound_by_deadlines, request_deadline

    # 200 header lines, one every 50 ms: each read is quick (a per-read timeout never
    # fires), the headers take 10 s
    with hostile_server(size=10, header_lines=200, delay_s=0.05) as url, httpx.Client(timeout=5) as client:
        assert bound_by_deadlines(client)
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout), request_deadline(started + 0.5):
            client.get(url)
        took = time.monotonic() - started
        assert took < 3, f"the headers held the request {took:.1f} s"
