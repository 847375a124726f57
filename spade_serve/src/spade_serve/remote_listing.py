"""Reading what a ``spade serve`` server offers (``GET /envs`` and ``GET /envs/<id>``),
without trusting the server: the client side of :mod:`spade_serve.listing`.

A server decides what it answers, so every read is bounded, one answer and the whole
listing alike (each bound ends the read with the caller's error class, naming it):

* **bytes per answer**: ``max_answer_bytes``, read as it streams, never past it
  (:func:`spade_core.app.http_reads.read_capped`: ``Content-Length`` first, then the bytes);
* **pages**: at most :data:`MAX_PAGES` pages for one listing, however short each is (a server
  may answer short pages, but one that never ends its listing is cut here);
* **bytes of a listing**: at most :data:`MAX_LISTING_BYTES` over all its pages (a listing of
  100,000 environments is about 17 MB), and at most :data:`MAX_LISTED` rows;
* **time**: one deadline, ``deadline_s`` from the reader's start, for every read it makes
  (each row of a named id, each page): every socket operation of a request ends by it
  (:func:`~spade_core.app.http_reads.bound_by_deadlines`), so neither a trickled answer nor a
  listing of prompt pages that never ends holds the caller longer.

Before, each page was bounded and the listing was not: a server answering pages of 4 MB,
each with a new ``next``, held the TRL adapter for 395 pages (1.66 GB in 25 s).
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import quote

from spade_core.errors import SpadeError

#: The most environments one listing may hold for a client to use.
MAX_LISTED = 100_000
#: Rows asked for per ``GET /envs`` page (the server's maximum).
PAGE_LIMIT = 1000
#: Pages one listing may take: full pages of :data:`MAX_LISTED` rows, and as many again
#: short ones (the server ends a page short when its store reads pass over rows).
MAX_PAGES = 2 * (MAX_LISTED // PAGE_LIMIT)
#: Bytes of all the pages of one listing (a row is about 170 bytes).
MAX_LISTING_BYTES = 64 << 20
#: The deadline of all the reads of one reader, by default.
LISTING_DEADLINE_S = 60.0


class RemoteListing:
    """The reads a client makes of one server's environments, under one budget (see the
    module doc); ``error`` is the exception class every failure raises (the caller's own)."""

    def __init__(self, url: str, *, token: str | None, max_answer_bytes: int, error: type[SpadeError],
                 deadline_s: float = LISTING_DEADLINE_S) -> None:
        if not deadline_s > 0:
            raise error(f"the listing deadline must be > 0 seconds, got {deadline_s!r}")
        self.url = url.rstrip("/")
        self.token = token
        self.max_answer_bytes = max_answer_bytes
        self.error = error
        self.deadline_s = deadline_s
        self.deadline = time.monotonic() + deadline_s
        self.pages = 0
        self.bytes = 0

    def row(self, ref: str) -> dict[str, Any]:
        """One environment's row, ``GET /envs/<id>`` (by id, name or ``spade/<id>``)."""
        ref_id = ref.removeprefix("spade/")
        row = self._get(f"/envs/{quote(ref_id, safe='')}", missing=f"does not serve {ref!r}")
        if not isinstance(row, dict) or "id" not in row:
            raise self.error(f"{self.url}/envs/{ref_id} is not a spade serve environment row")
        return row

    def rows(self, domain: str, skill: str | None) -> list[dict[str, Any]]:
        """Every row ``GET /envs?domain=&skill=`` lists, its pages followed to the end."""
        params = {"domain": domain, "limit": str(PAGE_LIMIT), **({"skill": skill} if skill is not None else {})}
        rows: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            if self.pages >= MAX_PAGES:
                raise self.error(f"the listing of {self.url} passed {MAX_PAGES} pages without an end: name a skill "
                                 "or the ids to use")
            listing = self._get("/envs", params={**params, **({"cursor": cursor} if cursor else {})},
                                missing="has no /envs listing")
            self.pages += 1
            envs = listing.get("envs") if isinstance(listing, dict) else None
            if not isinstance(envs, list):
                raise self.error(f"{self.url}/envs is not a spade serve listing (no 'envs' list)")
            rows.extend(e for e in envs if isinstance(e, dict) and "id" in e)
            if len(rows) > MAX_LISTED:
                raise self.error(f"the server at {self.url} lists more than {MAX_LISTED} environments of domain "
                                 f"{domain!r}: name a skill or the ids to use")
            cursor = listing.get("next")
            if not cursor:
                return rows
            if not isinstance(cursor, str):
                raise self.error(f"{self.url}/envs answered a 'next' that is not a cursor")

    def _get(self, route: str, *, params: dict[str, str] | None = None, missing: str) -> Any:
        """The JSON answer of ``GET route``, within the answer's and the listing's bounds; a
        404 is ``missing``."""
        import httpx
        from spade_core.app.http_reads import IDENTITY, AnswerTooSlow, bound_by_deadlines, read_capped, request_deadline

        if time.monotonic() >= self.deadline:
            raise self._late()
        headers = {**IDENTITY, **({"Authorization": f"Bearer {self.token}"} if self.token else {})}
        url = f"{self.url}{route}"
        limit = min(self.max_answer_bytes, MAX_LISTING_BYTES - self.bytes)
        try:
            with httpx.Client(timeout=self.deadline_s) as client:
                bound_by_deadlines(client)
                with request_deadline(self.deadline), client.stream("GET", url, params=params, headers=headers) as answer:
                    body = read_capped(answer, limit, source=url, deadline=self.deadline, deadline_s=self.deadline_s)
                    status, reason = answer.status_code, answer.reason_phrase
        except AnswerTooSlow:
            raise self._late() from None
        except SpadeError as exc:  # over the answer's or the listing's bytes, an encoding not read
            if limit < self.max_answer_bytes:
                raise self.error(f"the listing of {self.url} passed {MAX_LISTING_BYTES:,} bytes over "
                                 f"{self.pages + 1} pages: name a skill or the ids to use") from None
            raise self.error(f"cannot list the environments of {self.url}: {exc}") from None
        except httpx.TimeoutException:
            raise self._late() from None
        except (httpx.HTTPError, OSError, ValueError) as exc:
            raise self.error(f"cannot list the environments of {self.url}: {exc}") from None
        self.bytes += len(body)
        if status >= 400:
            said = error_message(body)
            if status == 404:
                raise self.error(f"the server at {self.url} {missing}" + (f": {said}" if said else ""))
            raise self.error(f"{url} answered {status} {reason}: " + (said or "cannot list its environments"))
        try:
            return json.loads(body)
        except ValueError as exc:
            raise self.error(f"{url} answered what is not JSON: {exc}") from None
        except RecursionError:
            raise self.error(f"{url} answered JSON nested too deep to read") from None

    def _late(self) -> SpadeError:
        return self.error(f"the listing of {self.url} passed its {self.deadline_s:g} s deadline ({self.pages} pages, "
                          f"{self.bytes:,} bytes read): the server is too slow, or its listing does not end")


def error_message(body: bytes) -> str:
    """The message of a spade serve error answer (``{"type": "error", "data": {"message"}}``,
    or a plain ``detail``), "" when the body has none."""
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):
        return ""
    if not isinstance(answer, dict):
        return ""
    data = answer.get("data") if isinstance(answer.get("data"), dict) else answer
    said = data.get("message") or data.get("detail") or ""
    return str(said)[:500]


__all__ = ["LISTING_DEADLINE_S", "MAX_LISTED", "MAX_LISTING_BYTES", "MAX_PAGES", "PAGE_LIMIT", "RemoteListing",
           "error_message"]
