"""A small client of a running ``spade serve`` over its plain HTTP routes (docs/serving.md):
``GET /envs`` lists what it serves (a page at a time, following ``next``), ``GET
/envs/<id>`` answers one environment's row (its turn cap, domain and skill), ``POST
/envs/<id>/reset`` opens a session (its id comes back in the ``X-Spade-Session``
header), ``POST /envs/<id>/step`` steps it,
``DELETE /sessions/<id>`` closes it. The environments run in the server's sandbox; this
side only sends actions and reads observations. Each :class:`RemoteEpisode` owns its
session and its connection, so concurrent episodes share nothing on this side.

Errors are split by whose they are:

* :class:`ServerUnreachable`, :class:`UnknownEnvironment`, :class:`EmptySelection`,
  :class:`ServerRefused`: the server or the request (not running, the id is not served,
  nothing of the asked domain or skill, a missing token, no capacity). They stop the
  run, each with what to do;
* :class:`EnvironmentFailed`: the environment's own failure on a reset or a step (it
  raised, broke its contract, passed its deadline or a sandbox limit; the server answers
  ``EXECUTION_ERROR``, ``VALIDATION_ERROR`` or ``EPISODE_STATE``). ``spade eval`` ends such
  an episode with the error recorded and return 0, and so does the adapter.

The server is not trusted with this side's memory or time: every answer is read as it
streams and refused past ``max_answer_bytes`` (``Content-Length`` first, then the bytes;
only uncompressed answers are read), every request ends by its deadline (``timeout_s``, the
request as a whole, headers trickled a line at a time included: not per read), and a
listing is bounded as a whole: :data:`MAX_PAGES` pages, :data:`MAX_LISTING_BYTES` bytes and
``deadline_s`` seconds for every request of :func:`served_environments`. Before, one answer
of about 1 GB was read whole, and a server trickling its answer held a run without end.
These restate ``spade_serve.remote_listing``'s bounds (SPADE's own clients).

Needs httpx only; no SPADE import.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

#: The header ``spade serve`` answers a session's id in (and reads it from).
SESSION_HEADER = "X-Spade-Session"
#: Error codes that are the environment's own failure, not the server's or the client's.
ENVIRONMENT_CODES = frozenset({"EXECUTION_ERROR", "VALIDATION_ERROR", "EPISODE_STATE"})
#: The largest answer read from the server, by default (a row, a page, an observation).
MAX_ANSWER_BYTES = 8 << 20
#: Bytes of all the pages of one listing (a row is about 170 bytes: 100,000 rows are 17 MB).
MAX_LISTING_BYTES = 64 << 20
#: The deadline of every request of :func:`served_environments` together, by default.
LISTING_DEADLINE_S = 300.0
#: What a bounded reader asks for: the answer's bytes are what it counts.
_IDENTITY = {"Accept-Encoding": "identity"}
T = TypeVar("T")


class SpadeServeError(RuntimeError):
    """Something about the server or the request stops the run."""

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


class ServerUnreachable(SpadeServeError):
    """Nothing answers at the base URL (or not in time)."""


class SelectionError(SpadeServeError):
    """What the run asked to play (ids, domain, skill) cannot be chosen from what the
    server serves."""


class UnknownEnvironment(SelectionError):
    """The server does not serve an id that was asked for."""


class EmptySelection(SelectionError):
    """The run's domain or skill selects none of the environments the server serves."""


class ServerRefused(SpadeServeError):
    """The server answered a request with an error that is not the environment's."""


class EnvironmentFailed(Exception):
    """The environment failed a reset or a step (``spade eval`` records it as the
    episode's error and scores the episode 0)."""

    def __init__(self, message: str, *, code: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.kind = kind


@dataclass(frozen=True)
class ServedEnvironment:
    """One environment a run plays: its id as the server names it and its own turn cap,
    as the server reports it."""

    id: str
    max_turns: int | None


@dataclass(frozen=True)
class Observation:
    """What a reset or a step answered."""

    text: str
    reward: float | None
    terminated: bool
    truncated: bool
    metadata: dict[str, Any] = field(default_factory=dict)


def _headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def _unreachable(base_url: str, exc: Exception) -> ServerUnreachable:
    return ServerUnreachable(
        f"spade serve is not reachable at {base_url} ({type(exc).__name__}: {exc}); start it with "
        "`spade serve ID [ID...]` and pass its address as base_url (--env.taskset.base-url)"
    )


@dataclass(frozen=True)
class BoundedAnswer:
    """An answer read within its bounds: status, headers and body."""

    status: int
    headers: httpx.Headers
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


async def read_bounded(http: httpx.AsyncClient, method: str, route: str, *, limit: int, deadline_s: float,
                       base: str, **kwargs: Any) -> BoundedAnswer:
    """``method route``'s answer, read as it streams: :class:`ServerRefused` past ``limit``
    bytes (declared or read), or in an encoding other than identity;
    :class:`ServerUnreachable` when the whole request (connect, headers, body) is not done
    within ``deadline_s`` seconds, or the server cannot be reached."""

    async def whole() -> BoundedAnswer:
        headers = {**_IDENTITY, **kwargs.pop("headers", {})}
        async with http.stream(method, route, headers=headers, **kwargs) as response:
            declared = response.headers.get("content-length", "").strip()
            if declared.isdigit() and int(declared) > limit:
                raise _too_large(base, route, limit, declared=int(declared))
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            if encoding not in ("identity", ""):
                raise ServerRefused(f"{base}{route} answered in content encoding {encoding!r}, which this client "
                                    "does not read (it asks for identity)")
            body = bytearray()
            async for chunk in response.aiter_raw():
                if len(body) + len(chunk) > limit:
                    raise _too_large(base, route, limit)
                body += chunk
            return BoundedAnswer(response.status_code, response.headers, bytes(body))

    try:
        return await asyncio.wait_for(whole(), deadline_s)
    except (TimeoutError, httpx.TimeoutException):
        raise ServerUnreachable(f"{base} did not answer {method} {route} within its {deadline_s:g} s deadline "
                                "(the request as a whole): the server is too slow, or trickles its answer") from None
    except httpx.HTTPError as exc:
        raise _unreachable(base, exc) from None


def _too_large(base: str, route: str, limit: int, *, declared: int | None = None) -> ServerRefused:
    said = f" (it declared {declared:,} bytes)" if declared is not None else ""
    return ServerRefused(f"{base}{route} answered more than the {limit:,}-byte limit{said}; the answer was not "
                         "read (max_answer_bytes)", code="ANSWER_TOO_LARGE")


def _run(make: Callable[[], Awaitable[T]]) -> T:
    """The result of the coroutine ``make()`` makes, from synchronous code: on this thread,
    or on a thread of its own when this one runs an event loop already."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())  # type: ignore[arg-type]
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()  # type: ignore[arg-type]


def _error_of(response: BoundedAnswer, base_url: str, what: str) -> Exception:
    """The exception for an error answer of ``spade serve`` (``{"type": "error", "data":
    {"code", "message", ...}}``), or for an answer that is not one of its."""
    try:
        data = response.json().get("data") or {}
    except (ValueError, AttributeError, RecursionError):
        data = {}
    code = data.get("code") if isinstance(data, dict) else None
    message = data.get("message") if isinstance(data, dict) else None
    if not code:
        return ServerRefused(
            f"{base_url} answered {what} with HTTP {response.status} and no spade serve error "
            f"({response.text[:200]!r}): is it a spade serve server?",
            status=response.status,
        )
    if code in ENVIRONMENT_CODES:
        return EnvironmentFailed(f"{code}: {message}", code=code, kind=data.get("kind"))
    if code == "UNKNOWN_ENV":
        return UnknownEnvironment(f"{base_url}: {message}", code=code, status=response.status)
    if code == "UNAUTHORIZED":
        message = f"{message} (pass the token of its --token-file: token_file or $SPADE_SERVE_TOKEN)"
    return ServerRefused(f"{base_url} refused {what}: {code}: {message}", code=code, status=response.status)


def _observation(answer: dict[str, Any]) -> Observation:
    obs = answer.get("observation") or {}
    reward = answer.get("reward")
    return Observation(
        text=str(obs.get("text", "")),
        reward=None if reward is None else float(reward),
        terminated=bool(obs.get("terminated", False)),
        truncated=bool(obs.get("truncated", False)),
        metadata=dict(obs.get("metadata") or {}),
    )


def _what(domain: str | None, skill: str | None) -> str:
    return " and ".join(f"{k} {v!r}" for k, v in (("domain", domain), ("skill", skill)) if v is not None)


#: Rows asked per ``GET /envs`` page (the server's most).
PAGE_SIZE = 1000
#: Pages read at most: a million environments at the default page size (a server whose
#: listing does not end is refused past it).
MAX_PAGES = 1000


def _json_of(response: BoundedAnswer, base: str, route: str) -> Any:
    try:
        return response.json()
    except (ValueError, RecursionError):
        raise ServerRefused(f"{base}{route} is not a spade serve answer: {response.text[:200]!r}") from None


@dataclass
class _Reads:
    """One selection's requests, under one budget: each request bounded in bytes
    (``limit``) and time (``timeout_s``, the request as a whole), all of them in
    :data:`MAX_LISTING_BYTES` bytes and by ``deadline`` (``loop.time()``)."""

    http: httpx.AsyncClient
    base: str
    limit: int
    timeout_s: float
    deadline: float
    deadline_s: float
    bytes: int = 0
    pages: int = 0

    async def get(self, route: str, **kwargs: Any) -> BoundedAnswer:
        left = self.deadline - asyncio.get_running_loop().time()
        if left <= 0:
            raise self.late()
        listing_left = MAX_LISTING_BYTES - self.bytes
        limit = min(self.limit, listing_left)
        try:
            answer = await read_bounded(self.http, "GET", route, limit=limit, deadline_s=min(self.timeout_s, left),
                                 base=self.base, **kwargs)
        except ServerRefused as exc:
            if exc.code == "ANSWER_TOO_LARGE" and limit < self.limit:
                raise ServerRefused(f"the listing of {self.base} passed {MAX_LISTING_BYTES:,} bytes over "
                                    f"{self.pages + 1} pages: name the ids, a domain or a skill to play",
                                    code="LISTING_TOO_LARGE") from None
            raise
        except ServerUnreachable:
            if asyncio.get_running_loop().time() >= self.deadline:
                raise self.late() from None
            raise
        self.bytes += len(answer.body)
        return answer

    def late(self) -> ServerUnreachable:
        return ServerUnreachable(f"reading what {self.base} serves passed its {self.deadline_s:g} s deadline "
                                 f"({self.pages} pages, {self.bytes:,} bytes read): the server is too slow, or its "
                                 "listing does not end")


async def _summary(reads: _Reads, ref: str) -> dict[str, Any]:
    """The server's row of one environment (``GET /envs/<id>``, by id or name; the
    server resolves a ``--all`` server's store environment on first use)."""
    base = reads.base
    route = f"/envs/{quote(ref.removeprefix('spade/'), safe='')}"
    answer = await reads.get(route)
    if answer.status != 200:
        error = _error_of(answer, base, f"GET {route}")
        if answer.status == 404 and isinstance(error, ServerRefused) and error.code is None:
            raise ServerRefused(f"{base} has no GET {route} (a spade serve older than its listing API?): update "
                                "spade serve", status=404)
        raise error
    row = _json_of(answer, base, route)
    if not isinstance(row, dict) or not isinstance(row.get("id"), str):
        raise ServerRefused(f"{base}{route} is not a spade serve environment row: {answer.text[:200]!r}")
    return _kept(row)


def _kept(row: dict[str, Any]) -> dict[str, Any]:
    """What a run uses of a row (the rest is not kept: a listing's rows stay small)."""
    return {k: row.get(k) for k in ("id", "max_turns", "domain", "skill")}


async def _listing(reads: _Reads, domain: str | None, skill: str | None, page_size: int) -> list[dict[str, Any]]:
    """Every row of the server's ``GET /envs`` of ``domain`` and ``skill``, in its order,
    page after page (``next``), within :data:`MAX_PAGES` pages and the reads' budget."""
    base = reads.base
    params: dict[str, Any] = {"limit": page_size}
    params.update({k: v for k, v in (("domain", domain), ("skill", skill)) if v is not None})
    cursor: str | None = None
    seen: set[str] = set()
    found: list[dict[str, Any]] = []
    while reads.pages < MAX_PAGES:
        answer = await reads.get("/envs", params={**params, **({"cursor": cursor} if cursor else {})})
        reads.pages += 1
        if answer.status != 200:
            data = _json_of(answer, base, "/envs") if answer.status == 422 else None
            data = data.get("data") if isinstance(data, dict) else None
            # a filter value no environment of the server has (the server names those it has)
            if isinstance(data, dict) and data.get("code") == "VALIDATION_ERROR" and data.get("param") in ("domain",
                                                                                                          "skill"):
                raise EmptySelection(f"nothing to play: {base}: {data.get('message')}", code="EMPTY_SELECTION")
            raise _error_of(answer, base, "GET /envs")
        body = _json_of(answer, base, "/envs")
        try:
            rows = [dict(row) for row in body["envs"]]
            following = body.get("next")
            if not all(isinstance(row["id"], str) for row in rows) or not isinstance(following, str | None):
                raise TypeError
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ServerRefused(f"{base}/envs is not a spade serve listing: {answer.text[:200]!r}") from None
        if "next" not in body and body.get("whole_registry"):
            raise SelectionError(
                f"{base} serves the whole registry (spade serve --all) but its listing does not page through it "
                "(a spade serve older than its listing API): update spade serve, or name the environments "
                "(--env.taskset.ids)", code="WHOLE_REGISTRY")
        found.extend(_kept(row) for row in rows)
        if following is None:
            return found
        if following in seen:
            raise ServerRefused(f"{base}/envs answered a cursor it had answered before: its listing does not end")
        seen.add(following)
        cursor = following
    raise ServerRefused(f"the listing of {base} did not end within {MAX_PAGES} pages of {page_size}",
                        code="LISTING_TOO_LONG")


def served_environments(base_url: str, ids: list[str] | None = None, *, domain: str | None = None,
                        skill: str | None = None, token: str | None = None, timeout_s: float = 30.0,
                        page_size: int = PAGE_SIZE, max_answer_bytes: int = MAX_ANSWER_BYTES,
                        deadline_s: float = LISTING_DEADLINE_S) -> list[ServedEnvironment]:
    """The environments a run plays on the server at ``base_url``, in the order ``spade eval
    --suite registry`` plays them: each of ``ids`` as the server resolves it (``GET
    /envs/<id>``: an environment's name, or ``spade/<id>``, resolves to its id; a ``--all``
    server's store environment too), or without ids every environment the server serves,
    in its listing's order (``GET /envs``, page after page of ``page_size``: a ``--all``
    server's seeds, then its registry's admitted environments); either kept to ``domain``
    and ``skill`` when given (``spade eval -o domain= -o skill=``; without ids the server
    filters). Each comes with its own turn cap, as the server reports it. Each request is
    bounded by ``timeout_s`` (as a whole) and ``max_answer_bytes``, all of them together by
    ``deadline_s``, :data:`MAX_PAGES` pages and :data:`MAX_LISTING_BYTES` bytes. Raises
    :class:`ServerUnreachable`, :class:`UnknownEnvironment`, :class:`EmptySelection` or
    :class:`ServerRefused`."""
    base = base_url.rstrip("/")

    async def select() -> list[dict[str, Any]]:
        async with httpx.AsyncClient(base_url=base, headers=_headers(token), timeout=timeout_s) as http:
            reads = _Reads(http, base, max_answer_bytes, timeout_s, asyncio.get_running_loop().time() + deadline_s,
                           deadline_s)
            if ids:
                return [await _summary(reads, ref) for ref in ids]
            listed = await _listing(reads, domain, skill, page_size)
            if not listed:
                what = f" of {_what(domain, skill)}" if domain is not None or skill is not None else ""
                raise EmptySelection(f"nothing to play: {base} serves no environment{what}", code="EMPTY_SELECTION")
            return listed

    chosen = _run(select)
    kept = [row for row in chosen if (domain is None or row.get("domain") == domain)
            and (skill is None or row.get("skill") == skill)]
    if not kept:
        domains = sorted({str(r.get("domain")) for r in chosen})
        of_domain = [r for r in chosen if domain is None or r.get("domain") == domain] or chosen
        skills = sorted({str(r.get("skill")) for r in of_domain})
        where = f" of domain {domain!r}" if domain in domains else ""
        which = f"none of the ids {', '.join(ids)} is" if ids else f"no environment {base} lists is"
        raise EmptySelection(
            f"nothing to play: {which} of {_what(domain, skill)} (domains: {', '.join(domains)}; "
            f"skills{where}: {', '.join(skills)})",
            code="EMPTY_SELECTION",
        )
    return [ServedEnvironment(str(row["id"]), row.get("max_turns")) for row in kept]


class RemoteEpisode:
    """One episode in a session of the server, over plain HTTP (``async with``; the
    session is closed on exit)."""

    def __init__(self, base_url: str, env_id: str, *, token: str | None = None, timeout_s: float = 120.0,
                 max_answer_bytes: int = MAX_ANSWER_BYTES) -> None:
        self.base_url = base_url.rstrip("/")
        self.env_id = env_id
        self.session_id: str | None = None
        self.timeout_s = timeout_s
        self.max_answer_bytes = max_answer_bytes
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=_headers(token), timeout=timeout_s)

    async def __aenter__(self) -> RemoteEpisode:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _post(self, route: str, body: dict[str, Any]) -> Observation:
        headers = {SESSION_HEADER: self.session_id} if self.session_id else {}
        path = f"/envs/{self.env_id}/{route}"
        answer = await read_bounded(self._http, "POST", path, limit=self.max_answer_bytes, deadline_s=self.timeout_s,
                             base=self.base_url, json=body, headers=headers)
        if answer.status != 200:
            raise _error_of(answer, self.base_url, f"POST {path}")
        self.session_id = answer.headers.get(SESSION_HEADER) or self.session_id
        data = _json_of(answer, self.base_url, path)
        if not isinstance(data, dict):
            raise ServerRefused(f"{self.base_url}{path} is not a spade serve answer: {answer.text[:200]!r}")
        return _observation(data)

    async def reset(self, seed: int) -> Observation:
        """Open a session (or reset the open one) at ``seed``; the first observation."""
        return await self._post("reset", {"seed": seed})

    async def step(self, message: str) -> Observation:
        """Send one action (the model's reply as it came)."""
        if self.session_id is None:
            raise RuntimeError("step before reset")
        return await self._post("step", {"action": {"message": message}})

    async def close(self) -> None:
        """Close the session (the server would close it when idle) and the connection."""
        try:
            if self.session_id is not None:
                try:
                    await self._http.delete(f"/sessions/{self.session_id}")
                except httpx.HTTPError:
                    pass  # the server closes an idle session itself
                self.session_id = None
        finally:
            await self._http.aclose()


__all__ = [
    "ENVIRONMENT_CODES",
    "LISTING_DEADLINE_S",
    "MAX_ANSWER_BYTES",
    "MAX_LISTING_BYTES",
    "SESSION_HEADER",
    "BoundedAnswer",
    "EmptySelection",
    "EnvironmentFailed",
    "Observation",
    "RemoteEpisode",
    "SelectionError",
    "ServedEnvironment",
    "ServerRefused",
    "ServerUnreachable",
    "SpadeServeError",
    "UnknownEnvironment",
    "read_bounded",
    "served_environments",
]
