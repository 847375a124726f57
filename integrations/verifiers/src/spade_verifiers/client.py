"""A small client of a running ``spade serve`` over its plain HTTP routes (docs/serving.md):
``GET /envs`` lists what it serves, ``POST /envs/<id>/reset`` opens a session (its id comes
back in the ``X-Spade-Session`` header), ``POST /envs/<id>/step`` steps it,
``DELETE /sessions/<id>`` closes it. The environments run in the server's sandbox; this
side only sends actions and reads observations.

Errors are split by whose they are:

* :class:`ServerUnreachable`, :class:`UnknownEnvironment`, :class:`ServerRefused`: the
  server or the request (not running, the id is not served, a missing token, no capacity).
  They stop the run, each with what to do;
* :class:`EnvironmentFailed`: the environment's own failure on a reset or a step (it
  raised, broke its contract, passed its deadline or a sandbox limit; the server answers
  ``EXECUTION_ERROR``, ``VALIDATION_ERROR`` or ``EPISODE_STATE``). ``spade eval`` ends such
  an episode with the error recorded and return 0, and so does the adapter.

Needs httpx only; no SPADE import.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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


class UnknownEnvironment(SpadeServeError):
    """The server does not serve an id that was asked for."""


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
    """One environment a run plays: its id as the server names it and its own turn cap
    (``None`` when the server resolves it on use and does not list it)."""

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


def served_environments(base_url: str, ids: list[str], *, token: str | None = None,
                        timeout_s: float = 30.0) -> list[ServedEnvironment]:
    """The environments ``ids`` names on the server at ``base_url``, in order: each id as
    the server lists it (an environment's name, or ``spade/<id>``, resolves to its id) and
    its ``max_turns``. Raises :class:`ServerUnreachable`, :class:`UnknownEnvironment` or
    :class:`ServerRefused`."""
    base = base_url.rstrip("/")
    with httpx.Client(base_url=base, headers=_headers(token), timeout=timeout_s) as http:
        try:
            listing = http.get("/envs")
        except httpx.HTTPError as exc:
            raise _unreachable(base, exc) from None
        if listing.status_code != 200:
            raise _error_of(listing, base, "GET /envs")
        try:
            body = listing.json()
            rows = list(body["envs"])
            whole_registry = bool(body.get("whole_registry"))
        except (ValueError, KeyError, TypeError):
            raise ServerRefused(f"{base}/envs is not a spade serve listing: {listing.text[:200]!r}") from None
        by_ref: dict[str, dict[str, Any]] = {}
        for row in rows:
            by_ref.setdefault(row["id"], row)
            by_ref.setdefault(row.get("name") or row["id"], row)
        found = []
        for ref in ids:
            row = by_ref.get(ref.removeprefix("spade/"))
            if row is not None:
                found.append(ServedEnvironment(row["id"], row.get("max_turns")))
                continue
            if not whole_registry:
                shown = ", ".join(r["id"] for r in rows[:8]) + (" ..." if len(rows) > 8 else "")
                raise UnknownEnvironment(f"{base} does not serve {ref!r} (it serves: {shown})", code="UNKNOWN_ENV")
            try:  # a whole-registry server (--all) resolves store environments on first use
                probe = http.get(f"/envs/{ref}/health")
            except httpx.HTTPError as exc:
                raise _unreachable(base, exc) from None
            if probe.status_code != 200:
                raise _error_of(probe, base, f"GET /envs/{ref}/health")
            found.append(ServedEnvironment(ref, None))
        return found


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
    "EnvironmentFailed",
    "Observation",
    "RemoteEpisode",
    "ServedEnvironment",
    "ServerRefused",
    "ServerUnreachable",
    "SpadeServeError",
    "UnknownEnvironment",
    "served_environments",
]
