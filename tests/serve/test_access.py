"""Who may talk to ``spade serve`` (spade_serve.access): a request must name the server
in its Host (a page of a rebound name never reaches it), a web page of another origin may
not call it (HTTP or WebSocket), bodies are JSON only (no preflight-free ``text/plain`` or
form posts), and ``X-Forwarded-For`` names the client only from the proxies named with
``trust_forwarded``. Legitimate clients (openenv-core's, SpadeEnvClient, httpx) are
unaffected: tests/serve/test_protocol.py plays through them."""

from __future__ import annotations

import asyncio
import json
import socket

import httpx
import pytest
from openenv.core.generic_client import GenericEnvClient
from spade_serve.access import AccessRules, parse_host, parse_origin
from spade_serve.client import SpadeEnvClient
from spade_serve.settings import ServeSettings
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from .test_faults import ask, ws_url


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


# --- Host ---------------------------------------------------------------------------------
def test_a_request_naming_another_host_is_refused(serve) -> None:
    """DNS rebinding: a page of attacker.example, rebound to 127.0.0.1, sends its own name."""
    with serve() as (url, manager), httpx.Client(base_url=url) as http:
        port = port_of(url)
        for host in (f"attacker.example:{port}", "attacker.example", f"127.0.0.1.attacker.example:{port}",
                     f"127.0.0.1:{port + 1}", "127.0.0.1", f"localhost.:{port}", ""):
            refused = http.get("/envs", headers={"Host": host})
            assert refused.status_code == 403, host
            assert refused.json()["data"]["code"] == "FORBIDDEN" and "Host" in refused.json()["data"]["message"]
            assert http.post("/reset", json={}, headers={"Host": host}).status_code == 403
        assert manager.sessions == {}
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}"):
            assert http.get("/envs", headers={"Host": host}).status_code == 200, host
        assert http.get("/health", headers={"Host": "anything.example"}).status_code == 200  # health: anyone
        with pytest.raises(InvalidStatus) as denied:  # the socket goes to the server, the URL names the page's host
            connect(f"ws://attacker.example:{port}/envs/counter-v1/ws", sock=socket.create_connection(("127.0.0.1", port)))
        assert denied.value.response.status_code == 403
        assert manager.sessions == {}


def test_allow_host_adds_names(serve) -> None:
    with serve(allow_hosts=("envs.internal", "gateway.internal:443")) as (url, _), httpx.Client(base_url=url) as http:
        assert http.get("/envs", headers={"Host": "envs.internal:9999"}).status_code == 200  # any port
        assert http.get("/envs", headers={"Host": "gateway.internal:443"}).status_code == 200
        assert http.get("/envs", headers={"Host": "gateway.internal:8443"}).status_code == 403
        assert http.get("/envs", headers={"Host": "other.internal"}).status_code == 403


# --- Origin -------------------------------------------------------------------------------
def test_pages_of_other_origins_cannot_call_the_server(serve) -> None:
    with serve() as (url, manager), httpx.Client(base_url=url) as http:
        port = port_of(url)
        for origin in ("http://attacker.example", f"http://127.0.0.1:{port + 1}", f"http://127.0.0.2:{port}",
                       "null", "file://", f"http://localhost:{port}/x"):
            refused = http.post("/reset", json={}, headers={"Origin": origin})
            assert refused.status_code == 403, origin
            assert "pages of" in refused.json()["data"]["message"]
            assert http.get("/envs", headers={"Origin": origin}).status_code == 403
            with pytest.raises(InvalidStatus) as denied:
                connect(ws_url(url), origin=origin)  # type: ignore[arg-type]
            assert denied.value.response.status_code == 403
        assert manager.sessions == {}
        # The server's own pages, and loopback pages of its port, may.
        for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}", f"http://[::1]:{port}"):
            assert http.post("/reset", json={}, headers={"Origin": origin}).status_code == 200, origin
            with connect(ws_url(url), origin=origin) as ws:  # type: ignore[arg-type]
                assert ask(ws, "reset", {"seed": 1})["type"] == "observation"


def test_allow_origin_lets_named_pages_call(serve) -> None:
    with serve(allow_origins=("https://dash.example.org",)) as (url, _), httpx.Client(base_url=url) as http:
        assert http.post("/reset", json={}, headers={"Origin": "https://dash.example.org"}).status_code == 200
        assert http.post("/reset", json={}, headers={"Origin": "https://dash.example.org:443"}).status_code == 200
        assert http.post("/reset", json={}, headers={"Origin": "http://dash.example.org"}).status_code == 403
        with connect(ws_url(url), origin="https://dash.example.org") as ws:  # type: ignore[arg-type]
            assert ask(ws, "reset", {"seed": 1})["type"] == "observation"


# --- bodies -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "ctype", ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]
)
def test_bodies_a_page_may_send_without_preflight_are_refused(serve, ctype: str) -> None:
    with serve() as (url, manager), httpx.Client(base_url=url) as http:
        body = json.dumps({"seed": 1}).encode()
        refused = http.post("/reset", content=body, headers={"Content-Type": ctype})
        assert refused.status_code == 415 and refused.json()["data"]["code"] == "UNSUPPORTED_MEDIA_TYPE"
        assert http.post("/mcp", content=b'{"jsonrpc": "2.0", "id": 1, "method": "x"}', headers={"Content-Type": ctype}).status_code == 415
        assert manager.sessions == {}


def test_json_bodies_and_empty_posts_are_read(serve) -> None:
    with serve() as (url, manager), httpx.Client(base_url=url) as http:
        assert http.post("/reset", json={"seed": 1}).status_code == 200
        assert http.post("/reset", content=b'{"seed": 2}', headers={"Content-Type": "Application/JSON; charset=utf-8"}).status_code == 200
        assert http.post("/reset").status_code == 200  # no body, no type: opens a session
        assert http.post("/reset", content=b'{"seed": 3}', headers={"Content-Type": ""}).status_code == 415
        no_type = httpx.Request("POST", url + "/reset", content=b'{"seed": 4}')
        assert "content-type" not in no_type.headers
        assert http.send(no_type).status_code == 415
        assert len(manager.sessions) == 3


# --- forwarded headers --------------------------------------------------------------------
def test_forwarded_for_from_loopback_does_not_name_the_client(serve) -> None:
    """uvicorn's default trusts X-Forwarded-For from loopback: any local process could then
    pass the per-client limit, or be taken for another client (and join its worker group)."""
    with serve(max_sessions_per_client=2, sessions_per_worker=4) as (url, manager), httpx.Client(base_url=url) as http:
        for i in range(2):
            assert http.post("/reset", json={}, headers={"X-Forwarded-For": f"10.9.8.{i}"}).status_code == 200
        third = http.post("/reset", json={}, headers={"X-Forwarded-For": "10.9.8.7", "Forwarded": "for=10.9.8.8"})
        assert third.status_code == 429 and third.json()["data"]["code"] == "CAPACITY_REACHED"
        assert {s.client for s in manager.sessions.values()} == {"127.0.0.1"}


def test_trusted_proxies_name_the_client(serve) -> None:
    with serve(max_sessions_per_client=1, trust_forwarded=("127.0.0.1",)) as (url, manager), httpx.Client(base_url=url) as http:
        for i in range(3):
            assert http.post("/reset", json={}, headers={"X-Forwarded-For": f"10.9.8.{i}"}).status_code == 200
        assert sorted(s.client for s in manager.sessions.values()) == ["10.9.8.0", "10.9.8.1", "10.9.8.2"]


# --- legitimate clients -------------------------------------------------------------------
def test_openenv_and_spade_clients_and_a_token_still_work(serve) -> None:
    token = "a-token-for-the-access-tests"
    with serve(token=token) as (url, _):

        async def go() -> tuple[str, str]:
            async with SpadeEnvClient(url, "counter-v1", token=token) as env:
                typed = (await env.reset(seed=1)).observation.text
            return typed, ""

        typed, _ = asyncio.run(go())
        assert typed.startswith("secret ")
    with serve() as (url, _):

        async def generic() -> str:
            async with GenericEnvClient(base_url=url + "/envs/counter-v1") as env:
                return (await env.reset(seed=1)).observation["text"]

        assert asyncio.run(generic()).startswith("secret ")


# --- the rules themselves -----------------------------------------------------------------
def test_host_values_are_parsed_strictly() -> None:
    assert parse_host("LocalHost:8000") == ("localhost", 8000)
    assert parse_host("[::1]:8000") == ("[::1]", 8000)
    assert parse_host("[::1]") == ("[::1]", None)
    for bad in ("", "::1", "[::1", "[nope]:80", "a:b", "a:0", "a:70000", "a b", "a/b", "user@a", "a:80:90"):
        assert parse_host(bad) is None, bad
    assert parse_origin("http://localhost:8000") == ("http", "localhost", 8000)
    assert parse_origin("https://x.example") == ("https", "x.example", 443)
    for bad in ("null", "file://", "ftp://x", "http://", "http://x/path"):
        assert parse_origin(bad) is None, bad


def test_the_default_hosts_follow_the_listen_address() -> None:
    loop = AccessRules("127.0.0.1", 8000)
    assert loop.host_allowed("127.0.0.1:8000") and loop.host_allowed("[::1]:8000") and loop.host_allowed("localhost:8000")
    assert not loop.host_allowed("192.168.1.5:8000") and not loop.host_allowed("127.0.0.1:8001")
    specific = AccessRules("192.168.1.5", 8000)
    assert specific.host_allowed("192.168.1.5:8000")
    assert not specific.host_allowed("127.0.0.1:8000") and not specific.host_allowed("rebound.example:8000")
    everywhere = AccessRules("0.0.0.0", 8000)
    assert everywhere.host_allowed("10.1.2.3:8000") and everywhere.host_allowed("[fe80::1]:8000")
    assert everywhere.host_allowed("localhost:8000")
    assert not everywhere.host_allowed("rebound.example:8000") and not everywhere.host_allowed("10.1.2.3:8001")
    assert AccessRules("0.0.0.0", 8000, allow_hosts=("*",)).host_allowed("anything.example")
    assert AccessRules("::", 8000).host_allowed("[2001:db8::1]:8000")
    # Origins: loopback pages of the port only when the server listens on loopback.
    assert loop.origin_allowed("http://localhost:8000", "127.0.0.1:8000")
    assert not specific.origin_allowed("http://127.0.0.1:8000", "192.168.1.5:8000")
    assert specific.origin_allowed("http://192.168.1.5:8000", "192.168.1.5:8000")


def test_settings_refuse_names_that_are_not_names() -> None:
    with pytest.raises(ValueError, match="allow_hosts"):
        ServeSettings(allow_hosts=("http://x.example",))
    with pytest.raises(ValueError, match="allow_origins"):
        ServeSettings(allow_origins=("x.example",))
    with pytest.raises(ValueError, match="trust_forwarded"):
        ServeSettings(trust_forwarded=("proxy.example",))
    ServeSettings(allow_hosts=("*", "a.example:80", "[::1]"), allow_origins=("*", "https://a.example"),
                  trust_forwarded=("10.0.0.0/8", "::1", "*"))
