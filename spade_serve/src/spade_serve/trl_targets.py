"""Which environments the TRL adapter offers, and how it opens each: the local ones
(registry ids, or a domain's seeds and admitted environments, chosen in the one catalog as
``spade serve`` chooses them, each instance opened by the adapter's
:class:`~spade_serve.env_factory.SandboxEnvFactory`) or a ``spade serve`` server's (read
through :class:`~spade_serve.remote_listing.RemoteListing`, the one client of a server's
listing, each instance a session on it)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from .catalog import build_catalog
from .errors import UnknownEnv
from .remote_listing import RemoteListing
from .trl_episode import EnvTarget, TrlEnvError

if TYPE_CHECKING:
    from spade_core.app.catalog import Catalog
    from spade_core.env import TextEnv

    from .env_factory import SandboxEnvFactory


def local_targets(catalog: Catalog, factory: SandboxEnvFactory, ids: list[str], domain: str | None,
                  skill: str | None) -> list[EnvTarget]:
    """The environments ``ids`` name and, with ``domain``, every seed and admitted
    environment of it (of ``skill`` only, when given), each once."""
    served = []
    try:
        if ids:
            served.extend(build_catalog(catalog, ids=ids).listed())
        if domain is not None:
            of_domain = build_catalog(catalog, domain=domain).listed()
            chosen = [e for e in of_domain if skill is None or e.metadata.skill == skill]
            if not chosen:
                skills = ", ".join(sorted({e.metadata.skill for e in of_domain}))
                raise TrlEnvError(f"domain {domain!r} has no environment of skill {skill!r} (its skills: {skills})")
            served.extend(chosen)
    except UnknownEnv as exc:
        raise TrlEnvError(str(exc)) from None
    unique = list({e.id: e for e in served}.values())
    return [EnvTarget(e.id, e.uses_tools, partial(factory.open, e)) for e in unique]


def remote_targets(url: str, ids: list[str], domain: str | None, skill: str | None, *, token: str | None,
                   max_answer_bytes: int, listing_deadline_s: float) -> list[EnvTarget]:
    """The environments the server at ``url`` offers, read under one budget of bytes, pages
    and time (:class:`~spade_serve.remote_listing.RemoteListing`)."""
    reads = RemoteListing(url, token=token, max_answer_bytes=max_answer_bytes, error=TrlEnvError,
                          deadline_s=listing_deadline_s)
    # each id by its own route: a --all server resolves store ids it does not list
    rows: list[dict[str, Any]] = [reads.row(ref) for ref in ids]
    if domain is not None:
        found = reads.rows(domain, skill)
        if not found:
            what = f"domain {domain!r}" + (f", skill {skill!r}" if skill else "")
            raise TrlEnvError(f"the server at {url} lists no environment of {what}")
        rows.extend(found)
    unique = list({str(r["id"]): r for r in rows}.values())
    return [EnvTarget(str(r["id"]), r.get("action_format") == "tool_call",
                      _session_opener(url, str(r["id"]), token, max_answer_bytes)) for r in unique]


def _session_opener(url: str, env_id: str, token: str | None, max_message_bytes: int) -> Callable[[], TextEnv]:
    def open_session() -> TextEnv:
        from .gym_remote import RemoteTextEnv

        return RemoteTextEnv(url, env_id, token=token, max_message_bytes=max_message_bytes)

    return open_session


__all__ = ["local_targets", "remote_targets"]
