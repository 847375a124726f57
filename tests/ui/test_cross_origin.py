"""Pages of another origin cannot drive ``spade serve`` or ``spade ui``, in a real browser
(headless chromium): a page served from 127.0.0.2 posts a preflight-free ``text/plain``
reset, a JSON one, reads a listing and opens a WebSocket at each server, and none of it
opens a session or reads anything; a page of a rebound name (DNS rebinding, simulated with
chromium's host resolver rules) is answered 403 instead of an environment's source. A ui
with a token needs it on every page and on the player, and carries it in a cookie."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from spade_core.config import load_config
from spade_core.metadata import EnvMetadata, EnvStatus
from spade_core.plugins import get_plugins

from .conftest import BROWSER_ARGS, build_store, chromium_path

pytestmark = pytest.mark.slow

ATTACKER_PAGE = """<!doctype html><title>another site</title><pre id="out"></pre><script>
(async () => {
  const p = new URLSearchParams(location.search);
  const http = p.get("http"), ws = p.get("ws"), out = {};
  try {
    await fetch(http + "/reset", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"},
                                  body: '{"seed": 1}'});
    out.simple_post = "sent";
  } catch (e) { out.simple_post = "error"; }
  try {
    const r = await fetch(http + "/reset", {method: "POST", headers: {"Content-Type": "application/json"}, body: "{}"});
    out.json_post = "status " + r.status;
  } catch (e) { out.json_post = "blocked"; }
  try { const r = await fetch(http + "/envs"); out.read = "read " + (await r.text()).slice(0, 40); }
  catch (e) { out.read = "blocked"; }
  out.websocket = await new Promise(resolve => {
    let s;
    try { s = new WebSocket(ws); } catch (e) { resolve("error"); return; }
    s.onopen = () => s.send(JSON.stringify({type: "reset", data: {seed: 1}}));
    s.onmessage = m => resolve("answered " + m.data.slice(0, 40));
    s.onerror = () => resolve("refused");
    s.onclose = () => resolve("refused");
    setTimeout(() => resolve("no answer"), 5000);
  });
  document.getElementById("out").textContent = JSON.stringify(out);
})();
</script>"""

COUNTER = '''
class CounterEnv:
    def reset(self, seed=None):
        self.turn = 0
        return f"seed {seed}", {}

    def step(self, action):
        self.turn += 1
        return f"turn {self.turn}", 0.0, False, False, {}
'''


@pytest.fixture(scope="module")
def attacker() -> Iterator[str]:
    """A page of another origin (127.0.0.2, its own port)."""

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = ATTACKER_PAGE.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.2", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.2:{server.server_address[1]}/"
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def rebinding_browser(browser: Any) -> Iterator[Any]:
    """Chromium resolving every *.test name to 127.0.0.1: a rebound name, as DNS
    rebinding leaves it (a second browser of the suite's playwright)."""
    b = browser.browser_type.launch(
        executable_path=chromium_path(), args=[*BROWSER_ARGS, "--host-resolver-rules=MAP *.test 127.0.0.1"]
    )
    try:
        yield b
    finally:
        b.close()


def attack(page: Any, attacker: str, http_base: str) -> dict[str, str]:
    import json
    from urllib.parse import urlencode

    ws = http_base.replace("http://", "ws://") + "/ws"
    page.goto(attacker + "?" + urlencode({"http": http_base, "ws": ws}))
    page.wait_for_function("document.getElementById('out').textContent.length > 0", timeout=20_000)
    return json.loads(page.inner_text("#out"))


def test_a_page_of_another_origin_cannot_drive_spade_serve(page: Any, attacker: str) -> None:
    from spade_serve.catalog import EnvCatalog, ServedEnv
    from spade_serve.server import running
    from spade_serve.sessions import SessionManager
    from spade_serve.settings import ServeSettings

    meta = EnvMetadata(name="counter", domain="testing", skill="counting", description="counts", max_turns=5,
                       class_name="CounterEnv", status=EnvStatus.admitted)
    manager = SessionManager(EnvCatalog([ServedEnv("store", meta, COUNTER, ())]), ServeSettings(port=0))
    with running(manager) as url:
        base = url + "/envs/counter-v1"
        seen = attack(page, attacker, base)
        assert manager.sessions == {}, seen  # the text/plain reset opened nothing
        assert seen["json_post"] == "blocked" and seen["read"] == "blocked", seen
        assert seen["websocket"] == "refused", seen
        # The server's own clients are unaffected.
        assert httpx.post(base + "/reset", json={"seed": 1}).status_code == 200


def test_a_page_of_another_origin_cannot_play_through_the_ui(ui_server: str, page: Any, attacker: str) -> None:
    seen = attack(page, attacker, ui_server + "/play/envs/hanoi_three-v1")
    status = httpx.get(ui_server + "/play/status").json()
    assert status["sessions"] == 0, seen
    assert seen["json_post"] == "blocked" and seen["read"] == "blocked" and seen["websocket"] == "refused", seen


def test_a_rebound_name_reads_neither_the_ui_nor_the_server(rebinding_browser: Any, ui_server: str) -> None:
    port = ui_server.rsplit(":", 1)[1]
    page = rebinding_browser.new_page()
    try:
        answer = page.goto(f"http://rebound.test:{port}/env/hanoi_three-v1")
        assert answer is not None and answer.status == 403
        assert "def solution" not in page.content() and "smallest disk" not in page.content()
        answer = page.goto(f"http://rebound.test:{port}/play/envs")
        assert answer is not None and answer.status == 403
        answer = page.goto(f"http://127.0.0.1:{port}/env/hanoi_three-v1")  # the same server, by its own name
        assert answer is not None and answer.status == 200 and "def solution" in page.inner_text("#code")
    finally:
        page.close()


# --- a ui with a token ----------------------------------------------------------------------
TOKEN = "ui-token-for-the-tests"


@pytest.fixture(scope="module")
def ui_with_token(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import time

    import uvicorn
    from spade_serve.server import free_port

    from spade_ui import UiSettings, create_ui_app, ui_uvicorn_config

    root = tmp_path_factory.mktemp("ui-token")
    url = f"sqlite:///{root / 'store.db'}"
    build_store(url)
    port = free_port()
    settings = UiSettings(port=port, runs_dir=root / "runs", token=TOKEN)
    app = create_ui_app(load_config(None, store_url=url), get_plugins(), settings)
    server = uvicorn.Server(ui_uvicorn_config(app, settings))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def test_a_ui_with_a_token_needs_it_on_every_page_and_on_the_player(ui_with_token: str) -> None:
    with httpx.Client(base_url=ui_with_token) as http:
        assert http.get("/").status_code == 401
        assert http.get("/env/hanoi_three-v1").status_code == 401
        assert http.get("/?token=wrong-token-value").status_code == 401
        denied = http.post("/play/envs/hanoi_three-v1/reset", json={"seed": 0})
        assert denied.status_code == 401 and denied.json()["data"]["code"] == "UNAUTHORIZED"
        assert http.get("/static/ui.css").status_code == 200  # the app's own files are public
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        assert http.get("/", headers=bearer).status_code == 200
        assert http.post("/play/envs/hanoi_three-v1/reset", json={"seed": 0}, headers=bearer).status_code == 200
        login = http.get(f"/env/hanoi_three-v1?token={TOKEN}&x=1", follow_redirects=False)
        assert login.status_code == 303 and login.headers["location"] == "/env/hanoi_three-v1?x=1"
        cookie = login.headers["set-cookie"]
        assert "HttpOnly" in cookie and "samesite=lax" in cookie.lower() and TOKEN not in cookie
        # the client kept the cookie; it is taken on the ui's own pages (a browser's headers say so:
        # tests/ui/test_attacks_cookie.py), for a state change with the ui's own Origin
        own = {"Sec-Fetch-Site": "same-origin", "Origin": ui_with_token}
        assert http.get("/env/hanoi_three-v1", headers=own).status_code == 200
        assert http.post("/play/envs/hanoi_three-v1/reset", json={"seed": 0}, headers=own).status_code == 200
    # The redirect stays on the ui: a path of "//name" does not send the browser to that name.
    escape = httpx.get(ui_with_token + "//attacker.example/?token=" + TOKEN, follow_redirects=False)
    assert escape.status_code == 303 and escape.headers["location"] == "/attacker.example/"


def test_the_browser_logs_in_once_and_plays(ui_with_token: str, page: Any) -> None:
    page.goto(ui_with_token + f"/env/hanoi_three-v1?token={TOKEN}")
    page.wait_for_url("**/env/hanoi_three-v1")
    page.click("#reset")
    page.wait_for_selector("#player[data-state=playing]")
    assert "Tower of Hanoi" in page.inner_text("#transcript")


def test_playing_is_off_beyond_loopback_without_a_token(tmp_path: Path) -> None:
    from spade_ui import UiSettings

    assert UiSettings(host="0.0.0.0").play_off() is not None
    assert "token" in (UiSettings(host="192.168.1.5").play_off() or "")
    assert UiSettings(host="0.0.0.0", token=TOKEN).play_off() is None
    assert UiSettings().play_off() is None
    assert UiSettings(play=False).play_off() == "spade ui --no-play"
