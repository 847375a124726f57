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

Needs httpx only; no SPADE import.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

#: The header ``spade serve`` answers a session's id in (and reads it from).
SESSION_HEADER = "X-Spade-Session"
#: Error codes that are the environment's own failure, not the server's or the client's.
ENVIRONMENT_CODES = frozenset({"EXECUTION_ERROR", "VALIDATION_ERROR", "EPISODE_STATE"})


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


def _error_of(response: httpx.Response, base_url: str, what: str) -> Exception:
    """The exception for an error answer of ``spade serve`` (``{"type": "error", "data":
    {"code", "message", ...}}``), or for an answer that is not one of its."""
    try:
        data = response.json().get("data") or {}
    except (ValueError, AttributeError):
        data = {}
    code = data.get("code") if isinstance(data, dict) else None
    message = data.get("message") if isinstance(data, dict) else None
    if not code:
        return ServerRefused(
            f"{base_url} answered {what} with HTTP {response.status_code} and no spade serve error "
            f"({response.text[:200]!r}): is it a spade serve server?",
            status=response.status_code,
        )
    if code in ENVIRONMENT_CODES:
        return EnvironmentFailed(f"{code}: {message}", code=code, kind=data.get("kind"))
    if code == "UNKNOWN_ENV":
        return UnknownEnvironment(f"{base_url}: {message}", code=code, status=response.status_code)
    if code == "UNAUTHORIZED":
        message = f"{message} (pass the token of its --token-file: token_file or $SPADE_SERVE_TOKEN)"
    return ServerRefused(f"{base_url} refused {what}: {code}: {message}", code=code, status=response.status_code)


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


def _json_of(response: httpx.Response, base: str, route: str) -> Any:
    try:
        return response.json()
    except ValueError:
        raise ServerRefused(f"{base}{route} is not a spade serve answer: {response.text[:200]!r}") from None


def _summary(http: httpx.Client, base: str, ref: str) -> dict[str, Any]:
    """The server's row of one environment (``GET /envs/<id>``, by id or name; the
    server resolves a ``--all`` server's store environment on first use)."""
    route = f"/envs/{quote(ref.removeprefix('spade/'), safe='')}"
    try:
        answer = http.get(route)
    except httpx.HTTPError as exc:
        raise _unreachable(base, exc) from None
    if answer.status_code != 200:
        error = _error_of(answer, base, f"GET {route}")
        if answer.status_code == 404 and isinstance(error, ServerRefused) and error.code is None:
            raise ServerRefused(f"{base} has no GET {route} (a spade serve older than its listing API?): update "
                                "spade serve", status=404)
        raise error
    row = _json_of(answer, base, route)
    if not isinstance(row, dict) or not isinstance(row.get("id"), str):
        raise ServerRefused(f"{base}{route} is not a spade serve environment row: {answer.text[:200]!r}")
    return row


def _listing(http: httpx.Client, base: str, domain: str | None, skill: str | None,
             page_size: int) -> Iterator[dict[str, Any]]:
    """Every row of the server's ``GET /envs`` of ``domain`` and ``skill``, in its order,
    page after page (``next``)."""
    params: dict[str, Any] = {"limit": page_size}
    params.update({k: v for k, v in (("domain", domain), ("skill", skill)) if v is not None})
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        try:
            answer = http.get("/envs", params={**params, **({"cursor": cursor} if cursor else {})})
        except httpx.HTTPError as exc:
            raise _unreachable(base, exc) from None
        if answer.status_code != 200:
            data = _json_of(answer, base, "/envs") if answer.status_code == 422 else None
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
        yield from rows
        if following is None:
            return
        if following in seen:
            raise ServerRefused(f"{base}/envs answered a cursor it had answered before: its listing does not end")
        seen.add(following)
        cursor = following
    raise ServerRefused(f"{base}/envs did not end within {MAX_PAGES} pages of {page_size}")


def served_environments(base_url: str, ids: list[str] | None = None, *, domain: str | None = None,
                        skill: str | None = None, token: str | None = None,
                        timeout_s: float = 30.0, page_size: int = PAGE_SIZE) -> list[ServedEnvironment]:
    """The environments a run plays on the server at ``base_url``, in the order ``spade eval
    --suite registry`` plays them: each of ``ids`` as the server resolves it (``GET
    /envs/<id>``: an environment's name, or ``spade/<id>``, resolves to its id; a ``--all``
    server's store environment too), or without ids every environment the server serves,
    in its listing's order (``GET /envs``, page after page of ``page_size``: a ``--all``
    server's seeds, then its registry's admitted environments); either kept to ``domain``
    and ``skill`` when given (``spade eval -o domain= -o skill=``; without ids the server
    filters). Each comes with its own turn cap, as the server reports it. Raises
    :class:`ServerUnreachable`, :class:`UnknownEnvironment`, :class:`EmptySelection` or
    :class:`ServerRefused`."""
    base = base_url.rstrip("/")
    with httpx.Client(base_url=base, headers=_headers(token), timeout=timeout_s) as http:
        if ids:
            chosen = [_summary(http, base, ref) for ref in ids]
        else:
            chosen = list(_listing(http, base, domain, skill, page_size))
            if not chosen:
                what = f" of {_what(domain, skill)}" if domain is not None or skill is not None else ""
                raise EmptySelection(f"nothing to play: {base} serves no environment{what}", code="EMPTY_SELECTION")
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

    def __init__(self, base_url: str, env_id: str, *, token: str | None = None, timeout_s: float = 120.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.env_id = env_id
        self.session_id: str | None = None
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=_headers(token), timeout=timeout_s)

    async def __aenter__(self) -> RemoteEpisode:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _post(self, route: str, body: dict[str, Any]) -> Observation:
        headers = {SESSION_HEADER: self.session_id} if self.session_id else {}
        try:
            answer = await self._http.post(f"/envs/{self.env_id}/{route}", json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise _unreachable(self.base_url, exc) from None
        if answer.status_code != 200:
            raise _error_of(answer, self.base_url, f"POST /envs/{self.env_id}/{route}")
        self.session_id = answer.headers.get(SESSION_HEADER) or self.session_id
        return _observation(answer.json())

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
    "SESSION_HEADER",
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
    "served_environments",
]
