"""``GET /envs``: everything a server serves, a page at a time.

The order is fixed: the environments resolved at start-up (:meth:`EnvCatalog.listed`:
the ids named, a domain's, then with ``--all`` every seed), then, on a whole-registry
server, the store's admitted environments in the store's order (insertion order), each
once. For ``spade serve --all`` that is ``spade eval --suite registry``'s order without
``-o ids`` (seeds, then the store's admitted environments), and with ``domain`` and
``skill`` its order with ``-o domain=`` and ``-o skill=``.

Query parameters: ``domain``, ``skill`` (filters), ``limit`` (the page's size, 1 to
:data:`MAX_LIMIT`, :data:`DEFAULT_LIMIT` when absent) and ``cursor`` (the ``next`` of the
previous answer). The answer is ``{"envs": [rows], "whole_registry": bool, "next":
cursor or null}``; ``next`` is null on the last page. A page may hold fewer rows than
``limit`` and still have a ``next`` (a request reads at most :data:`STORE_READS` chunks of
the store); only a null ``next`` ends the listing.

The store is read with keyset paging (:meth:`~spade_core.store.EnvStore.find`'s
``after=``): an environment admitted behind the cursor while a client pages is not
listed in that pass, one retired ahead of it is not listed either, and no environment is
listed twice or skipped because others changed. A late page costs what the first does.

The cursor is opaque to clients: URL-safe base64 of the position (the index among the
environments resolved up front, or the last store id read), the filters it was issued
for and the listing it belongs to (:attr:`EnvCatalog.fingerprint`), with a check value:
HMAC-SHA256 under the server's cursor key (:func:`cursor_key`), cut to 16 bytes and
compared in constant time. The key is made at random when the server starts, so a cursor
cannot be made up, edited, or carried to another server or a restarted one; replicas
behind one address that must take each other's cursors are given one secret
(``ServeSettings.cursor_secret``, ``spade serve --cursor-secret-file``), from which each
derives the same key. A cursor's content is read (with :mod:`spade_serve.json_input`'s
bounds) only once its check value holds.

Every wrong parameter is answered 422 with code ``VALIDATION_ERROR`` (the server's answer
to any wrong request field), the parameter in ``param`` and a message that says what to
send instead.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from spade_core.errors import EnvNotFound

from . import json_input
from .catalog import EnvCatalog, summary_of
from .errors import InvalidRequest

#: Rows per page when the request names no ``limit``, and the most it may name. A
#: request without parameters gets the first 1,000 (every environment of a server
#: started with up to 1,000, as before paging), and ``next`` when there are more.
DEFAULT_LIMIT = 1000
MAX_LIMIT = 1000
#: Store reads one page makes at most (each of up to ``limit + 1`` rows). Rows the store
#: holds that were listed up front (an id named at start) are passed over; when a page
#: is not filled within these reads it ends short, with ``next``.
STORE_READS = 4
#: The longest cursor taken. An issued one is shorter: its filters are at most
#: :data:`MAX_FILTER_CHARS` each and its store id at most the store's 200.
MAX_CURSOR_CHARS = 4096
#: The longest filter value taken: the store's skill column (domains are shorter).
MAX_FILTER_CHARS = 120
PARAMS = ("domain", "skill", "limit", "cursor")
_KEY_CONTEXT = b"spade-serve GET /envs cursor"
_TAG_BYTES = 16
_CURSOR_RE = re.compile(r"[A-Za-z0-9_-]+")
_VERSION = 1


class InvalidQuery(InvalidRequest):
    """A query parameter of ``GET /envs`` is wrong (unknown, repeated, out of range, a
    cursor this listing did not issue, a filter value that selects no served
    environment); ``param`` names it. The server's answer to wrong request fields
    (``VALIDATION_ERROR``, HTTP 422, as FastAPI answers a query it cannot validate)."""


@dataclass(frozen=True)
class Query:
    """A ``GET /envs`` request, its parameters checked for form."""

    domain: str | None = None
    skill: str | None = None
    limit: int = DEFAULT_LIMIT
    cursor: str | None = None


def parse_query(items: Iterable[tuple[str, str]]) -> Query:
    """The request's query parameters (``(name, value)`` pairs, repeats kept) as a
    :class:`Query`; :class:`InvalidQuery` for an unknown, repeated or malformed one."""
    seen: dict[str, str] = {}
    for name, value in items:
        if name not in PARAMS:
            raise InvalidQuery(f"unknown query parameter {name!r}: GET /envs takes {', '.join(PARAMS)}", param=name)
        if name in seen:
            raise InvalidQuery(f"query parameter {name!r} is given twice: give it once", param=name)
        if not value:
            raise InvalidQuery(f"query parameter {name!r} is empty: give a value or leave it out", param=name)
        seen[name] = value
    for name in ("domain", "skill"):
        if len(seen.get(name, "")) > MAX_FILTER_CHARS:
            raise InvalidQuery(f"{name} is over {MAX_FILTER_CHARS} characters: no environment has such a {name}",
                               param=name)
    limit = DEFAULT_LIMIT
    if "limit" in seen:
        raw = seen["limit"]
        if not raw.isascii() or not raw.isdigit() or len(raw) > 9:
            raise InvalidQuery(f"limit must be a whole number from 1 to {MAX_LIMIT}, got {raw[:40]!r}", param="limit")
        limit = int(raw)
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidQuery(f"limit must be from 1 to {MAX_LIMIT}, got {limit}: page with cursor for more",
                               param="limit")
    return Query(seen.get("domain"), seen.get("skill"), limit, seen.get("cursor"))


@dataclass(frozen=True)
class _Position:
    #: The next environment resolved up front to look at; ``len(listed)`` once past them.
    index: int
    #: Past the listed ones, on a whole registry: the last store id read (None: from the start).
    after: str | None = None


def cursor_key(secret: str | None = None) -> bytes:
    """The key a server signs its cursors with: derived from ``secret`` (replicas given one
    secret take each other's cursors), else 32 random bytes, new at each start."""
    if secret is None:
        return secrets.token_bytes(32)
    return hmac.new(secret.encode(), _KEY_CONTEXT, hashlib.sha256).digest()


def _tag(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, payload, "sha256").digest()[:_TAG_BYTES]


def _encode(catalog: EnvCatalog, query: Query, at: _Position, key: bytes) -> str:
    payload = json.dumps({"v": _VERSION, "l": catalog.fingerprint, "d": query.domain, "s": query.skill,
                          "i": at.index, "a": at.after}, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(_tag(key, payload) + payload).rstrip(b"=").decode("ascii")


def _altered() -> InvalidQuery:
    return InvalidQuery("cursor is not one this listing issued (cut, altered or made up): pass the 'next' of the "
                        "previous answer as it came, or leave cursor out to start from the first page",
                        param="cursor")


def _decode(catalog: EnvCatalog, query: Query, cursor: str, listed: int, key: bytes) -> _Position:
    if len(cursor) > MAX_CURSOR_CHARS:
        raise InvalidQuery(f"cursor is over {MAX_CURSOR_CHARS} characters: not one this listing issued; pass the "
                           "'next' of the previous answer as it came", param="cursor")
    if not _CURSOR_RE.fullmatch(cursor):
        raise _altered()
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (binascii.Error, ValueError):
        raise _altered() from None
    tag, payload = raw[:_TAG_BYTES], raw[_TAG_BYTES:]
    if len(tag) != _TAG_BYTES or not hmac.compare_digest(tag, _tag(key, payload)):
        raise _altered()
    try:  # signed by this server, so well formed; read with bounds all the same
        data = json_input.loads(payload, max_depth=1)
        version, fingerprint, domain, skill = data["v"], data["l"], data["d"], data["s"]
        index, after = data["i"], data["a"]
    except (json_input.MalformedJson, KeyError, TypeError):
        raise _altered() from None
    if version != _VERSION:
        raise InvalidQuery(f"cursor is of another version of this listing ({version!r}): leave cursor out to start "
                           "from the first page", param="cursor")
    if fingerprint != catalog.fingerprint:
        raise InvalidQuery("cursor pages another listing (a server started with other environments, or restarted "
                           "with others): leave cursor out to start from the first page", param="cursor")
    if (domain, skill) != (query.domain, query.skill):
        raise InvalidQuery(f"cursor was issued for domain={domain!r} and skill={skill!r}, not domain="
                           f"{query.domain!r} and skill={query.skill!r}: send the same filters with it, or leave "
                           "cursor out to start again", param="cursor")
    if (not isinstance(index, int) or isinstance(index, bool) or not 0 <= index <= listed
            or not (after is None or (isinstance(after, str) and index == listed and catalog.registry is not None))):
        raise _altered()
    return _Position(index, after)


def _check_filter(catalog: EnvCatalog, name: str, value: str) -> None:
    """:class:`InvalidQuery` unless some served environment has ``value`` as its
    ``name`` (domain or skill)."""
    listed = catalog.listed()
    if any(getattr(e.metadata, name) == value for e in listed):
        return
    registry = catalog.registry
    if registry is not None:
        found = registry(value, None, None, 1) if name == "domain" else registry(None, value, None, 1)
        if found:
            return
    values = ", ".join(sorted({str(getattr(e.metadata, name)) for e in listed})) or "none"
    if registry is None:
        raise InvalidQuery(f"no environment this server serves is of {name} {value!r} (its {name}s: {values})",
                           param=name, value=value)
    raise InvalidQuery(f"no environment this server serves is of {name} {value!r}: no seed or environment listed at "
                       f"start is (their {name}s: {values}), and no admitted environment of its registry", param=name,
                       value=value)


def page(catalog: EnvCatalog, query: Query, key: bytes) -> dict[str, Any]:
    """One page of ``GET /envs``, its cursors signed with ``key`` (:func:`cursor_key`; reads
    the store on a whole registry: call it off the event loop)."""
    listed = catalog.listed()
    if query.cursor is None:
        at = _Position(0)
        for name in ("domain", "skill"):
            value = getattr(query, name)
            if value is not None:
                _check_filter(catalog, name, value)
    else:
        at = _decode(catalog, query, query.cursor, len(listed), key)

    def answer(rows: list[dict[str, Any]], following: _Position | None) -> dict[str, Any]:
        nxt = None if following is None else _encode(catalog, query, following, key)
        return {"envs": rows, "whole_registry": catalog.whole_registry, "next": nxt}

    rows: list[dict[str, Any]] = []
    index = at.index
    while index < len(listed):
        m = listed[index].metadata
        if (query.domain is None or m.domain == query.domain) and (query.skill is None or m.skill == query.skill):
            if len(rows) == query.limit:
                return answer(rows, _Position(index))
            rows.append(listed[index].summary())
        index += 1
    registry = catalog.registry
    if registry is None:
        return answer(rows, None)
    # The registry's admitted environments, past those listed up front (an id named at
    # start, or a store environment that shares a seed's id, is listed once, there).
    own = {e.id for e in listed}
    after = at.after
    for _ in range(STORE_READS):
        wanted = query.limit - len(rows) + 1  # one more than fits: is there a next page?
        try:
            batch = registry(query.domain, query.skill, after, wanted)
        except EnvNotFound:
            raise _altered() from None
        for meta in batch:
            if len(rows) == query.limit:
                return answer(rows, _Position(index, after))
            after = meta.id
            if meta.id not in own:
                rows.append(summary_of("store", meta))
        if len(batch) < wanted:
            return answer(rows, None)
    return answer(rows, _Position(index, after))


__all__ = ["DEFAULT_LIMIT", "MAX_LIMIT", "InvalidQuery", "Query", "cursor_key", "page", "parse_query"]
