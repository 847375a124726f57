"""The ui's login cookie is no credential outside the ui's own pages.

Browsers send a host's cookies to every port of that host, so whatever runs on another
port of the machine (another ui, a notebook, a page the user opens there, the server
behind it) gets the ui's cookie. Before, that cookie alone opened every page and the
player, from anywhere, and its value was the same for every ui with the same token, on
every port, across restarts. Now:

* its name carries the ui's port (two uis on one host neither overwrite nor read each
  other's) and its value is signed with a key made when the ui starts (a cookie of another
  ui, or of this one before a restart, is refused);
* it is taken only on the ui's own browser requests: the browser's own ``Sec-Fetch-Site``
  says ``same-origin`` (the ui's pages and scripts) or ``none`` (an address typed or
  bookmarked), or the request is a top-level navigation to a page (a link followed from
  elsewhere, whose answer goes to the user, never to the page that linked); a request of
  another port's page (``same-site``: a script's fetch, an image, a frame) and a request
  that is no browser's (no ``Sec-Fetch-Site``) is refused, and scripts use ``Authorization:
  Bearer``;
* a request that changes something with it (a POST, a WebSocket) also needs the ui's own
  ``Origin``.

Requests here are made the way a browser makes them (its ``Sec-Fetch-*`` and ``Origin``
headers), over real sockets to a ui served as ``spade ui`` serves it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from spade_core.config import load_config
from spade_core.plugins import get_plugins

from .conftest import build_store

TOKEN = "ui-token-for-the-cookie-tests"
ENV = "/env/hanoi_three-v1"
RESET = "/play/envs/hanoi_three-v1/reset"


@contextmanager
def ui(store_url: str, runs: Path) -> Iterator[str]:
    import uvicorn
    from spade_serve.server import free_port

    from spade_ui import UiSettings, create_ui_app, ui_uvicorn_config

    settings = UiSettings(port=free_port(), runs_dir=runs, token=TOKEN)
    server = uvicorn.Server(ui_uvicorn_config(create_ui_app(load_config(None, store_url=store_url), get_plugins(),
                                                            settings), settings))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{settings.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    root = tmp_path_factory.mktemp("ui-cookie")
    url = f"sqlite:///{root / 'store.db'}"
    build_store(url)
    (root / "runs").mkdir()
    return url, root / "runs"


def login(base: str) -> str:
    """The ``Cookie`` header a browser holds after opening ``/?token=`` (typed: ``none``)."""
    answer = httpx.get(f"{base}/?token={TOKEN}", headers={"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate",
                                                          "Sec-Fetch-Dest": "document"}, follow_redirects=False)
    assert answer.status_code == 303, answer.text
    name, _, rest = answer.headers["set-cookie"].partition("=")
    return f"{name}={rest.split(';', 1)[0]}"


def own(base: str, **extra: str) -> dict[str, str]:
    """The headers of a request of the ui's own page."""
    return {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty", "Origin": base,
            **extra}


def test_the_cookie_opens_the_uis_own_pages_and_player(store: tuple[str, Path]) -> None:
    with ui(*store) as base:
        cookie = login(base)
        port = base.rsplit(":", 1)[1]
        assert cookie.split("=", 1)[0].endswith(port), cookie  # its name carries the port
        page = {"Cookie": cookie, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate",
                "Sec-Fetch-Dest": "document"}
        assert httpx.get(base + ENV, headers=page).status_code == 200
        assert httpx.post(base + RESET, json={"seed": 0}, headers={"Cookie": cookie, **own(base)}).status_code == 200
        # a link followed from another port's page: a top-level navigation, answered to the user
        linked = {"Cookie": cookie, "Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate",
                  "Sec-Fetch-Dest": "document"}
        assert httpx.get(base + ENV, headers=linked).status_code == 200


def test_another_ports_page_and_a_replay_cannot_use_the_cookie(store: tuple[str, Path]) -> None:
    with ui(*store) as base:
        cookie = login(base)
        other = "http://127.0.0.1:1"  # a page of another port of the same host
        refused = [
            # a script of another port's page: its fetch, a subresource, a frame
            ("GET", ENV, {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty",
                          "Origin": other}),
            ("GET", ENV, {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "script"}),
            ("GET", ENV, {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}),
            ("POST", RESET, {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "cors", "Origin": other}),
            # the cookie replayed by whatever received it (no browser's headers)
            ("GET", ENV, {}),
            ("GET", "/play/envs", {}),
            ("POST", RESET, {}),
            # a state change without the ui's own Origin
            ("POST", RESET, {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}),
        ]
        for method, path, headers in refused:
            answer = httpx.request(method, base + path, headers={"Cookie": cookie, **headers},
                                   json={"seed": 0} if method == "POST" else None)
            assert answer.status_code in (401, 403), (method, path, headers, answer.status_code)
            assert "def solution" not in answer.text
        status = httpx.get(base + "/play/status", headers={"Authorization": f"Bearer {TOKEN}"}).json()
        assert status["sessions"] == 0
        # the bearer token still works from anywhere: scripts use it
        assert httpx.get(base + ENV, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_a_cookie_of_another_ui_or_of_an_earlier_start_is_refused(store: tuple[str, Path]) -> None:
    page = {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
    with ui(*store) as first, ui(*store) as second:  # the same token, two ports
        cookie = login(first)
        name, value = cookie.split("=", 1)
        second_port = second.rsplit(":", 1)[1]
        renamed = f"{name[: -len(first.rsplit(':', 1)[1])]}{second_port}={value}"
        for attempt in (cookie, renamed):
            assert httpx.get(second + ENV, headers={"Cookie": attempt, **page}).status_code == 401, attempt
        assert httpx.get(first + ENV, headers={"Cookie": cookie, **page}).status_code == 200
    with ui(*store) as again:  # a later start (another port here; a restart too)
        renamed = f"{name[: -len(first.rsplit(':', 1)[1])]}{again.rsplit(':', 1)[1]}={value}"
        assert httpx.get(again + ENV, headers={"Cookie": renamed, **page}).status_code == 401


NEIGHBOUR_PAGE = """<!doctype html><title>another port</title><pre id="out"></pre><script>
(async () => {
  const ui = new URLSearchParams(location.search).get("ui"), out = {};
  try { const r = await fetch(ui + "/play/envs/hanoi_three-v1/reset", {method: "POST", credentials: "include",
        headers: {"Content-Type": "application/json"}, body: '{"seed": 0}'}); out.post = "status " + r.status; }
  catch (e) { out.post = "blocked"; }
  try { await fetch(ui + "/play/envs/hanoi_three-v1/reset", {method: "POST", mode: "no-cors", credentials: "include",
        headers: {"Content-Type": "text/plain"}, body: '{"seed": 0}'}); out.simple_post = "sent"; }
  catch (e) { out.simple_post = "error"; }
  document.getElementById("out").textContent = JSON.stringify(out);
})();
</script>"""


@contextmanager
def neighbour() -> Iterator[tuple[str, list[str]]]:
    """A server on another port of the same host (127.0.0.1) serving :data:`NEIGHBOUR_PAGE`;
    the ``Cookie`` headers browsers sent it."""
    import http.server

    received: list[str] = []

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            received.append(self.headers.get("Cookie", ""))
            body = NEIGHBOUR_PAGE.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", received
    finally:
        server.shutdown()


@pytest.mark.slow
def test_in_a_browser_another_port_gets_the_cookie_and_can_use_it_neither_in_page_nor_replayed(
        store: tuple[str, Path], page) -> None:  # type: ignore[no-untyped-def]
    import json
    from urllib.parse import urlencode

    with ui(*store) as base, neighbour() as (other, received):
        page.goto(f"{base}{ENV}?token={TOKEN}")
        page.wait_for_url(f"**{ENV}")
        assert "def solution" in page.inner_text("#code")  # logged in
        page.goto(other + "?" + urlencode({"ui": base}))
        page.wait_for_function("document.getElementById('out').textContent.length > 0", timeout=20_000)
        seen = json.loads(page.inner_text("#out"))
        assert seen["post"] == "blocked", seen
        sent = next(c for c in received if c)  # the browser gave the ui's cookie to the other port
        assert f"spade_ui_{base.rsplit(':', 1)[1]}=" in sent, sent
        for path in (ENV, "/play/envs"):  # replayed as the other port's server received it
            assert httpx.get(base + path, headers={"Cookie": sent}).status_code == 401
        assert httpx.post(base + RESET, json={"seed": 0}, headers={"Cookie": sent}).status_code == 401
        status = httpx.get(base + "/play/status", headers={"Authorization": f"Bearer {TOKEN}"}).json()
        assert status["sessions"] == 0, (seen, status)
