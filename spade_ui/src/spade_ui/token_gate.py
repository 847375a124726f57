"""The token of a ``spade ui`` started with ``--token-file``: who may read its pages and play.

A request shows the token as ``Authorization: Bearer <token>`` (scripts), or as the cookie
the ui sets when a browser opens ``/...?token=<token>`` once (then redirected to the same
page without it). Browsers send a host's cookies to every port of the host, so whatever
runs on another port of the machine gets that cookie too; the cookie is therefore bound to
this ui and to its own pages, and is no credential anywhere else:

* **this ui only**: its name carries the ui's port (:func:`cookie_name`: two uis on one host
  neither overwrite nor read each other's) and its value is an HMAC under a key made when the
  ui starts, so a cookie of another ui, with the same token or not, or of this ui before a
  restart, is refused (the user opens ``?token=`` again);
* **its own pages only**: the cookie is taken when the browser's own ``Sec-Fetch-Site``
  header (which a page cannot set) says the request is the ui's (``same-origin``), or typed
  or bookmarked (``none``, reads only), or when it is a top-level navigation to a page
  (``Sec-Fetch-Mode: navigate``, ``Sec-Fetch-Dest: document``: a link followed from elsewhere,
  answered to the user, never to the page that linked). A script, image or frame of another
  port's page is ``same-site`` and refused, and so is a request that is no browser's (no
  ``Sec-Fetch-Site``: the cookie replayed by whatever received it); scripts and old
  browsers send the bearer token;
* **state changes** (any method but GET, HEAD and OPTIONS, and WebSockets) with the cookie
  also need the ui's own ``Origin``.

A program on this host that receives the cookie and forges a browser's headers can still
use it until the ui restarts: the cookie keeps pages of other ports out, not other
programs of the same user; a ui that must keep those out is reached through its own host
name (cookies are kept per host name) or behind a proxy with TLS.

A request let through carries the token on to the mounted player as ``Authorization`` (which
checks it as ``spade serve`` does).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

#: Methods that change nothing (a cookie on any other needs the ui's own Origin).
_READS = frozenset({"GET", "HEAD", "OPTIONS"})


def cookie_name(port: int) -> str:
    """The name of the login cookie of the ui on ``port``."""
    return f"spade_ui_{port}"


class TokenGate:
    """ASGI middleware of a ui with a token (see the module doc): every route but
    ``/static`` needs it."""

    def __init__(self, app: Any, token: str, port: int) -> None:
        self.app = app
        self.token = token.encode()
        self.cookie = cookie_name(port)
        # Made at each start: a cookie holds for this ui while it runs, nowhere else.
        self._key = secrets.token_bytes(32)
        self.proof = hmac.new(self._key, f"spade-ui-cookie:{port}".encode(), hashlib.sha256).hexdigest()

    def _bearer(self, headers: Any) -> bool:
        scheme, _, value = headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self.token)

    def _cookie(self, scope: dict[str, Any], headers: Any) -> bool:
        """Whether the request shows this ui's cookie in a context the cookie is good for."""
        from starlette.requests import cookie_parser

        shown = cookie_parser(headers.get("cookie", "")).get(self.cookie, "")
        if not hmac.compare_digest(shown.encode(), self.proof.encode()):
            return False
        site = headers.get("sec-fetch-site")
        changes = scope["type"] == "websocket" or scope.get("method", "GET") not in _READS
        if site == "same-origin":
            return not changes or headers.get("origin") == _own_origin(scope, headers)
        if changes:
            return False
        if site == "none":
            return True
        # a link followed from another page (another port's, another site's): the answer is the user's
        return (site in ("same-site", "cross-site") and headers.get("sec-fetch-mode") == "navigate"
                and headers.get("sec-fetch-dest") == "document")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        from starlette.datastructures import Headers

        if scope["type"] not in ("http", "websocket") or scope["path"].startswith("/static/"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if self._bearer(headers) or self._cookie(scope, headers):
            passed = [(k, v) for k, v in scope.get("headers") or () if k.lower() != b"authorization"]
            passed.append((b"authorization", b"Bearer " + self.token))
            await self.app({**scope, "headers": passed}, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "this ui needs its token"})
            return
        await self._refuse(scope, receive, send)

    async def _refuse(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """The login (``?token=`` on a GET: the cookie, and the page without the token), or 401."""
        from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse

        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = next((v for k, v in query if k == "token"), None)
        if scope["method"] == "GET" and given is not None and hmac.compare_digest(given.encode(), self.token):
            rest = [(k, v) for k, v in query if k != "token"]
            location = "/" + quote(scope["path"].lstrip("/")) + ("?" + urlencode(rest) if rest else "")
            response: Any = RedirectResponse(location, status_code=303)
            response.set_cookie(self.cookie, self.proof, httponly=True, samesite="lax", path="/")
        elif scope["path"].startswith("/play/"):
            data = {"code": "UNAUTHORIZED", "message": "this ui needs its token ('Authorization: Bearer <token>'; "
                    "its login cookie is taken on the ui's own pages only)"}
            response = JSONResponse({"type": "error", "data": data}, status_code=401)
        else:
            response = HTMLResponse(
                '<!doctype html><title>SPADE ui: token needed</title><p id="error">This ui needs its token: open '
                "the address <code>spade ui</code> printed, <code>/?token=&lt;the token of --token-file&gt;</code>, "
                "once; the browser keeps it in a cookie for this ui's own pages.</p>",
                status_code=401,
            )
        await response(scope, receive, send)


def _own_origin(scope: dict[str, Any], headers: Any) -> str:
    """The ui's origin as this request reached it (its Host, checked by the access guard
    before this gate, and its scheme)."""
    scheme = {"ws": "http", "wss": "https"}.get(scope.get("scheme", "http"), scope.get("scheme", "http"))
    return f"{scheme}://{headers.get('host', '')}"


__all__ = ["TokenGate", "cookie_name"]
