"""Malformed requests are answered with the protocol's own error, never 500: JSON nested
thousands deep, numbers of thousands of digits, Unicode digits where a number is asked for,
on every route that reads JSON or a number (``/mcp``, ``/reset``, ``/step``, the Task API,
the WebSocket), and listing cursors made up, nested or signed with the key an older server
kept in its source: cursors are signed with a secret of each server, so one server's cursor
is refused by another started alike (unless both are given the same secret).

Each answer is checked for its exact kind (JSON-RPC ``error.code``, HTTP 422 with
``VALIDATION_ERROR``), and the server is checked to answer a good request after the bad ones.
"""

from __future__ import annotations

import base64
import hmac
import json
from typing import Any

import httpx
import pytest
from spade_serve.catalog import EnvCatalog
from spade_serve.server import running
from spade_serve.sessions import SessionManager
from spade_serve.settings import ServeSettings
from websockets.sync.client import connect

from .conftest import Serve
from .envs import served
from .test_faults import ws_url

DEEP = "[" * 100_000 + "]" * 100_000
DEEP_OBJECT = '{"a":' * 5_000 + "1" + "}" * 5_000
BIG = "9" * 5_000
#: Unicode digits: superscript two (a digit to ``str.isdigit``, not to ``int``), Arabic-Indic
#: one two three (a number to ``int``), and fullwidth seven.
UNICODE_DIGITS = ("\u00b2", "\u0661\u0662\u0663", "\uff17")
#: The key the listing's cursors were signed with before they had a server's own.
OLD_KEY = b"spade-serve GET /envs cursor"


def rpc_body(params: str = "{}", rid: str = "1") -> str:
    return f'{{"jsonrpc":"2.0","id":{rid},"method":"initialize","params":{params}}}'


def post(http: httpx.Client, path: str, text: str) -> httpx.Response:
    return http.post(path, content=text.encode(), headers={"Content-Type": "application/json"})


def assert_rpc_error(answer: httpx.Response, code: int) -> dict[str, Any]:
    assert answer.status_code < 500, answer.text[:300]
    error = answer.json()["error"]
    assert error["code"] == code, error
    return dict(error)


def assert_422(answer: httpx.Response, says: str = "") -> None:
    assert answer.status_code == 422, answer.text[:300]
    data = answer.json()["data"]
    assert data["code"] == "VALIDATION_ERROR", data
    assert says in data["message"], data["message"]


def test_mcp_answers_malformed_json_rpc_with_json_rpc_errors(serve: Serve) -> None:
    with serve() as (url, manager), httpx.Client(base_url=url, timeout=30) as http:
        for body in (DEEP, rpc_body(params=DEEP_OBJECT), rpc_body(rid=BIG), rpc_body(params=f'{{"seed":{BIG}}}'),
                     rpc_body(params='{"seed":NaN}'), rpc_body(params='{"seed":1e999999}')):
            assert "Parse error" in assert_rpc_error(post(http, "/mcp", body), -32700)["message"]
        # ?seed= and ?index= on the URL: Unicode digits, thousands of digits, past a seed's range
        for value in (*UNICODE_DIGITS, BIG, str(2**64)):
            for param in ("seed", "index"):
                error = assert_rpc_error(post(http, f"/mcp?{param}={value}" + ("&split=train" if param == "index" else ""),
                                              rpc_body()), -32602)
                assert param in error["message"], error
        # openenv's session/create takes them in params too
        for seed, code in (('"\u0661"', -32602), (str(2**64), -32602), ("-1", -32602), (BIG[:4000], -32700)):
            body = f'{{"jsonrpc":"2.0","id":2,"method":"openenv/session/create","params":{{"seed":{seed}}}}}'
            error = assert_rpc_error(post(http, "/mcp", body), code)
            assert "seed" in error["message"] or "digits" in error["message"], error
        assert manager.sessions == {}
        good = post(http, "/mcp?seed=3", rpc_body())
        assert good.status_code == 200 and "result" in good.json()


def test_http_and_websocket_routes_answer_malformed_json_with_422(serve: Serve) -> None:
    with serve() as (url, manager), httpx.Client(base_url=url, timeout=30) as http:
        for path in ("/reset", "/step", "/counter-v1/task", "/counter-v1/task_range", "/counter-v1/num_tasks"):
            for body in (DEEP, DEEP_OBJECT, f'{{"seed":{BIG}}}', '{"seed": NaN}'):
                assert_422(post(http, path, body))
        assert_422(post(http, "/reset", f'{{"seed":{2**64}}}'), "seed")
        assert_422(post(http, "/reset", f'{{"seed":{BIG[:4000]}}}'), "4000 digits")
        with connect(ws_url(url), max_size=None) as ws:
            for message in (DEEP, f'{{"type":"reset","data":{{"seed":{BIG}}}}}', '{"type":"reset","data":' + DEEP_OBJECT + "}",
                            f'{{"type":"reset","data":{{"seed":{2**64}}}}}'):
                ws.send(message)
                reply = json.loads(ws.recv(timeout=30))
                assert reply["type"] == "error" and reply["data"]["code"] in ("INVALID_JSON", "VALIDATION_ERROR"), reply
            ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
            assert json.loads(ws.recv(timeout=30))["type"] == "observation"
        assert http.post("/reset", json={"seed": 1}).status_code == 200


def _cursor(payload: bytes, key: bytes = OLD_KEY) -> str:
    tag = hmac.new(key, payload, "sha256").digest()[:12]
    return base64.urlsafe_b64encode(tag + payload).rstrip(b"=").decode()


def test_listing_cursors_cannot_be_forged_and_never_answer_500() -> None:
    envs = [served(f"counter{i}") for i in range(5)]
    catalog = EnvCatalog(envs)
    manager = SessionManager(catalog, ServeSettings(port=0))
    with running(manager) as url, httpx.Client(base_url=url, timeout=30) as http:
        issued = http.get("/envs", params={"limit": 2}).json()["next"]
        fields = {"v": 1, "l": catalog.fingerprint, "d": None, "s": None}
        nested = json.dumps({**fields, "i": 0, "a": None})[:-1].encode() + b',"x":' + b"[" * 2000 + b"]" * 2000 + b"}"
        for payload in (json.dumps({**fields, "i": 4, "a": None}).encode(),  # a valid position, signed with the old key
                        nested, b"[" * 3000 + b"]" * 3000, json.dumps({**fields, "i": 10**400}).encode()):
            answer = http.get("/envs", params={"cursor": _cursor(payload)})
            assert_422(answer, "not one this listing issued")
        # another server, started alike, has a secret of its own: this one's cursor is not its
        other = SessionManager(EnvCatalog(envs), ServeSettings(port=0))
        with running(other) as other_url:
            assert_422(httpx.get(f"{other_url}/envs", params={"cursor": issued}), "not one this listing issued")
        assert [r["id"] for r in http.get("/envs", params={"cursor": issued}).json()["envs"]] == [
            "counter2-v1", "counter3-v1", "counter4-v1"]


def test_replicas_given_one_secret_take_each_others_cursors() -> None:
    envs = [served(f"counter{i}") for i in range(3)]
    secret = "a-listing-secret-shared-by-replicas-0123456789"
    first = SessionManager(EnvCatalog(envs), ServeSettings(port=0, cursor_secret=secret))
    second = SessionManager(EnvCatalog(envs), ServeSettings(port=0, cursor_secret=secret))
    with running(first) as a, running(second) as b:
        issued = httpx.get(f"{a}/envs", params={"limit": 1}).json()["next"]
        rows = httpx.get(f"{b}/envs", params={"cursor": issued}).json()["envs"]
        assert [r["id"] for r in rows] == ["counter1-v1", "counter2-v1"]
    with pytest.raises(ValueError, match="cursor_secret"):
        ServeSettings(cursor_secret="short")
