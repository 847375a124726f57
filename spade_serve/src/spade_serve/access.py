"""Who may talk to a server: the ``Host`` it answers to, the web pages (``Origin``) that
may call it, and the bodies it reads. Used by ``spade serve``'s app and by ``spade ui``
(which mounts it), as the outermost layer of each, for HTTP and WebSocket alike.

The rule (docs/serving.md, "Security"):

* ``Host``: a request must name this server: on a loopback address ``127.0.0.1``,
  ``localhost`` or ``[::1]`` (and the address it listens on) with the port it is served
  on; on another address, that address with the port; on every address (``0.0.0.0``,
  ``::``), any IP address with the port, or ``localhost``. ``allow_hosts`` adds names
  (``name``: at any port, ``name:port``, ``*``: any Host). A page served from a name the
  attacker owns (DNS rebinding) therefore never reaches the server: its requests carry
  that name.
* ``Origin``, when a request has one (browsers send it on every cross-origin request and
  WebSocket): the origin whose host and port are the request's ``Host`` (the server's own
  pages), ``http://`` with a loopback name and the served port (when the server listens
  on loopback or every address), or one of ``allow_origins`` (``*``: any). ``null`` is
  no origin anyone may allow but with ``*``.
* a request that sends a body (any method but GET, HEAD and OPTIONS) sends it as
  ``Content-Type: application/json``; ``text/plain`` and form bodies, which a page of any
  origin may send without asking first (no CORS preflight), are refused with 415.
* ``/health`` answers anyone who reaches the port (load balancers, container checks).

A refused HTTP request gets ``403 FORBIDDEN`` (Host, Origin) or ``415
UNSUPPORTED_MEDIA_TYPE``; a refused WebSocket is closed before its handshake completes
(HTTP 403).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .errors import Forbidden, ServeError, UnsupportedMediaType

#: Host names of the loopback interface a local browser uses.
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
_WILDCARDS = frozenset({"0.0.0.0", "::", ""})
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_BODYLESS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Paths answered whatever the Host and Origin (nothing there to read or to do).
OPEN_PATHS = frozenset({"/health"})


def parse_host(value: str) -> tuple[str, int | None] | None:
    """``(name, port)`` of a Host value (``name``, ``name:port``, ``[v6]``, ``[v6]:port``),
    the name lower-cased (IPv6 kept in brackets); ``None`` when it is not one."""
    v = value.strip().lower()
    if not v or any(c.isspace() or c in "/?#@\\" for c in v):
        return None
    port_text: str | None
    if v.startswith("["):
        end = v.find("]")
        if end < 0:
            return None
        name, rest = v[: end + 1], v[end + 1 :]
        try:
            ipaddress.IPv6Address(name[1:-1])
        except ValueError:
            return None
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else None
    else:
        if v.count(":") > 1:  # a bare IPv6 address is no Host value
            return None
        name, sep, after = v.partition(":")
        port_text = after if sep else None
    if not name:
        return None
    if port_text is None:
        return name, None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return None
    return name, int(port_text)


def parse_origin(value: str) -> tuple[str, str, int] | None:
    """``(scheme, host name, port)`` of an origin (``http(s)://host[:port]``, the default
    port filled in); ``None`` for anything else (``null``, a path, another scheme)."""
    scheme, sep, rest = value.strip().lower().partition("://")
    if not sep or scheme not in ("http", "https"):
        return None
    rest = rest.rstrip("/")
    parsed = parse_host(rest)
    if parsed is None:
        return None
    name, port = parsed
    return scheme, name, port if port is not None else _DEFAULT_PORTS[scheme]


def _is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name[1:-1] if name.startswith("[") else name)
    except ValueError:
        return False
    return True


def _bracketed(host: str) -> str:
    """A listen address as a Host name (IPv6 in brackets), lower-cased."""
    h = host.strip().lower()
    if ":" in h and not h.startswith("["):
        return f"[{h}]"
    return h


@dataclass(frozen=True)
class AccessRules:
    """The Host, Origin and body rules of one server listening on ``host`` (see the
    module docstring). ``port`` is the served port when a request does not say which
    local port it came in on (``scope["server"]``)."""

    host: str = "127.0.0.1"
    port: int = 8000
    allow_hosts: tuple[str, ...] = ()
    allow_origins: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        hosts: list[tuple[str, int | None]] = []
        for entry in self.allow_hosts:
            if entry.strip() == "*":
                continue
            parsed = parse_host(entry)
            if parsed is None:
                raise ValueError(f"allow_hosts: {entry!r} is not a host name, address or name:port")
            hosts.append(parsed)
        origins: list[tuple[str, str, int]] = []
        for entry in self.allow_origins:
            if entry.strip() == "*":
                continue
            parsed_origin = parse_origin(entry)
            if parsed_origin is None:
                raise ValueError(f"allow_origins: {entry!r} is not an origin (scheme://host[:port])")
            origins.append(parsed_origin)
        bound = _bracketed(self.host)
        wildcard = bound in _WILDCARDS or bound == "[::]"
        try:
            loopback = bound == "localhost" or ipaddress.ip_address(bound.strip("[]")).is_loopback
        except ValueError:
            loopback = False
        names = set(LOOPBACK_NAMES) if loopback else set()
        if wildcard:
            names.add("localhost")
        elif bound:
            names.add(bound)
        object.__setattr__(self, "_hosts", tuple(hosts))
        object.__setattr__(self, "_any_host", any(e.strip() == "*" for e in self.allow_hosts))
        object.__setattr__(self, "_origins", frozenset(origins))
        object.__setattr__(self, "_any_origin", any(e.strip() == "*" for e in self.allow_origins))
        object.__setattr__(self, "_names", frozenset(names))
        object.__setattr__(self, "_wildcard", wildcard)
        object.__setattr__(self, "_loopback_pages", loopback or wildcard)

    @classmethod
    def of(cls, settings: Any) -> AccessRules:
        """The rules of a :class:`~spade_serve.settings.ServeSettings`."""
        return cls(settings.host, settings.port, tuple(settings.allow_hosts), tuple(settings.allow_origins))

    def host_allowed(self, value: str | None, served_port: int | None = None) -> bool:
        """Whether a request naming ``value`` in its Host header is for this server. A
        request without one (HTTP/1.0; browsers always send it) is let through."""
        if value is None or self._any_host:  # type: ignore[attr-defined]
            return True
        parsed = parse_host(value)
        if parsed is None:
            return False
        name, port = parsed
        port = 80 if port is None else port
        for allowed_name, allowed_port in self._hosts:  # type: ignore[attr-defined]
            if allowed_name == name and (allowed_port is None or allowed_port == port):
                return True
        if port != (served_port or self.port):
            return False
        return name in self._names or (self._wildcard and _is_ip_literal(name))  # type: ignore[attr-defined]

    def origin_allowed(self, origin: str, host: str | None, served_port: int | None = None) -> bool:
        """Whether a page of ``origin`` may call this server (``host``: the request's
        Host header, already allowed)."""
        if self._any_origin:  # type: ignore[attr-defined]
            return True
        parsed = parse_origin(origin)
        if parsed is None:
            return False
        if parsed in self._origins:  # type: ignore[attr-defined]
            return True
        scheme, name, port = parsed
        if host is not None:
            own = parse_host(host)
            if own is not None and own[0] == name and (own[1] if own[1] is not None else _DEFAULT_PORTS[scheme]) == port:
                return True  # the server's own pages
        return (
            self._loopback_pages  # type: ignore[attr-defined]
            and scheme == "http"
            and name in LOOPBACK_NAMES
            and port == (served_port or self.port)
        )

    def check(self, scope: dict[str, Any]) -> ServeError | None:
        """The refusal of a request (an HTTP or WebSocket ``scope``), or ``None``."""
        path = scope.get("path", "")
        root = scope.get("root_path", "")
        if path in OPEN_PATHS or (root and path.startswith(root) and path[len(root) :] in OPEN_PATHS):
            return None
        headers = _headers(scope.get("headers") or ())
        server = scope.get("server")
        served_port = server[1] if server and len(server) > 1 and isinstance(server[1], int) else None
        host = headers.get("host")
        if not self.host_allowed(host, served_port):
            return Forbidden(
                f"this server does not answer to the Host {host!r} (a page of another site, or a name it was not "
                "told of: spade serve --allow-host NAME)"
            )
        origin = headers.get("origin")
        if origin is not None and not self.origin_allowed(origin, host, served_port):
            return Forbidden(
                f"requests from pages of {origin!r} are refused (only this server's own pages, loopback pages of its "
                "port, and origins given with --allow-origin may call it)"
            )
        if scope["type"] == "http" and scope.get("method", "GET") not in _BODYLESS:
            ctype = headers.get("content-type")
            has_body = headers.get("content-length", "0").strip() not in ("", "0") or "transfer-encoding" in headers
            if ctype is None:
                if has_body:
                    return UnsupportedMediaType("a request body must be sent as Content-Type: application/json")
            elif ctype.split(";", 1)[0].strip().lower() != "application/json":
                return UnsupportedMediaType(
                    f"a request body must be sent as Content-Type: application/json, not {ctype.split(';', 1)[0]!r}"
                )
        return None


def _headers(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """The request's headers by lower-cased name; a repeated Host, Origin or Content-Type
    keeps its first value, and an unreadable one is kept as text that matches nothing."""
    out: dict[str, str] = {}
    for name, value in raw:
        key = name.decode("latin-1").lower()
        if key in out:
            if key in ("host", "origin", "content-type"):
                out[key] = "\x00repeated"  # two Hosts or Origins: trust neither
            continue
        out[key] = value.decode("latin-1")
    return out


class AccessGuard:
    """ASGI middleware applying :class:`AccessRules` to every HTTP request and WebSocket
    before the app sees it. ``rules`` is the rules, or a function giving the current ones
    (an app whose address is decided when it is run)."""

    def __init__(self, app: Any, rules: AccessRules | Callable[[], AccessRules]) -> None:
        self.app = app
        self._rules = rules

    @property
    def rules(self) -> AccessRules:
        return self._rules if isinstance(self._rules, AccessRules) else self._rules()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refused = self.rules.check(scope)
        if refused is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            # Closed before it is accepted: the client's handshake is answered 403.
            reason = "Origin refused" if "pages of" in refused.message else "Host refused"
            await send({"type": "websocket.close", "code": 1008, "reason": reason})
        else:
            from starlette.responses import JSONResponse

            body = {"type": "error", "data": refused.payload()}
            await JSONResponse(body, status_code=refused.http_status)(scope, receive, send)


__all__ = ["LOOPBACK_NAMES", "AccessGuard", "AccessRules", "parse_host", "parse_origin"]
