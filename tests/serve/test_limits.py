"""The limits of a server: sessions in total and per client, a bounded call queue that
answers BUSY, request sizes, the bearer token, idle sessions closed and their workers
freed."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from spade_serve.client import SpadeEnvClient
from spade_serve.errors import ServerBusy
from spade_serve.sessions import CallGate
from websockets.exceptions import ConnectionClosed, ConnectionClosedError, InvalidStatus
from websockets.sync.client import connect


def ws_url(url: str, env: str = "counter-v1") -> str:
    return url.replace("http://", "ws://") + f"/envs/{env}/ws"


def recv(ws) -> dict:
    return json.loads(ws.recv(timeout=20))


def test_sessions_past_the_per_client_limit_are_refused_with_capacity_reached(serve) -> None:
    with serve(max_sessions_per_client=2, max_sessions=3) as (url, manager):
        with connect(ws_url(url)) as a, connect(ws_url(url)) as b, connect(ws_url(url)) as c:
            for ws in (a, b):
                ws.send('{"type": "reset", "data": {"seed": 1}}')
                assert recv(ws)["type"] == "observation"
            refused = recv(c)  # opened at connect: refused at once, then closed
            assert refused["data"]["code"] == "CAPACITY_REACHED"
            assert "max_sessions_per_client = 2" in refused["data"]["message"]
            assert len(manager.sessions) == 2
        with httpx.Client(base_url=url) as http:
            deadline = time.monotonic() + 10
            while manager.sessions and time.monotonic() < deadline:  # the sockets' sessions close
                time.sleep(0.02)
            assert http.post("/reset", json={}).status_code == 200  # room again once they closed


def test_a_full_call_queue_answers_busy_at_once_instead_of_queueing() -> None:
    async def go() -> tuple[float, ServerBusy]:
        gate = CallGate(threads=1, queue=1)
        slow = [asyncio.ensure_future(gate.run(time.sleep, 0.5)) for _ in range(2)]
        await asyncio.sleep(0.05)
        start = time.monotonic()
        with pytest.raises(ServerBusy) as busy:
            await gate.run(time.sleep, 0)
        waited = time.monotonic() - start
        await asyncio.gather(*slow)
        assert gate.pending == 0
        await gate.run(time.sleep, 0)  # capacity is back
        gate.shutdown()
        return waited, busy.value

    waited, busy = asyncio.run(go())
    assert waited < 0.1 and busy.code == "BUSY" and busy.http_status == 503


def test_busy_reaches_http_clients_as_503_with_retry_after(serve) -> None:
    with serve(max_concurrent_calls=1, max_queued_calls=0) as (url, _), httpx.Client(base_url=url, timeout=30) as http:
        sid = http.post("/reset", json={"seed": 1}).headers["X-Spade-Session"]

        async def race() -> list[httpx.Response]:
            async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                hang = client.post("/step", json={"action": {"message": "hang"}, "session_id": sid})
                other = asyncio.sleep(0.3)
                task = asyncio.ensure_future(hang)
                await other
                busy = await client.post("/reset", json={})
                return [await task, busy]

        hung, busy = asyncio.run(race())
    assert busy.status_code == 503 and busy.headers["Retry-After"] == "1"
    assert busy.json()["data"]["code"] == "BUSY"
    assert hung.json()["data"]["kind"] == "timeout"


def test_request_bodies_and_messages_over_the_size_limit_are_refused(serve) -> None:
    with serve(max_request_bytes=4096) as (url, manager), httpx.Client(base_url=url) as http:
        big = http.post("/reset", content=b"{" + b" " * 5000 + b"}", headers={"content-type": "application/json"})
        assert big.status_code == 413 and big.json()["data"]["code"] == "REQUEST_TOO_LARGE"
        with connect(ws_url(url), max_size=None) as ws:
            ws.send(json.dumps({"type": "step", "data": {"message": "x" * 5000}}))
            with pytest.raises(ConnectionClosedError) as closed:
                recv(ws)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # "message too big"
        deadline = time.monotonic() + 10
        while manager.sessions and time.monotonic() < deadline:
            time.sleep(0.02)
        assert manager.sessions == {}


def test_a_bearer_token_guards_every_route_but_health(serve) -> None:
    token = "s3cret-token-for-tests"
    with serve(token=token) as (url, _), httpx.Client(base_url=url) as http:
        assert http.get("/health").status_code == 200
        denied = http.post("/reset", json={})
        assert denied.status_code == 401 and denied.json()["data"]["code"] == "UNAUTHORIZED"
        assert http.post("/reset", json={}, headers={"Authorization": "Bearer wrong-token"}).status_code == 401
        assert http.post("/reset", json={}, headers={"Authorization": f"Bearer {token}"}).status_code == 200
        with pytest.raises(InvalidStatus):
            connect(ws_url(url))

        async def play() -> str:
            async with SpadeEnvClient(url, "counter-v1", token=token) as env:
                return (await env.reset(seed=1)).observation.text

        assert asyncio.run(play()).startswith("secret ")


def test_idle_sessions_are_closed_and_their_workers_freed(serve, pool) -> None:
    with serve(idle_timeout_s=0.3) as (url, manager), httpx.Client(base_url=url) as http:
        sid = http.post("/reset", json={"seed": 1}).headers["X-Spade-Session"]
        session = manager.sessions[sid]
        handle = session.instance.handle
        assert pool.worker_of(handle).instances == 1
        deadline = time.monotonic() + 10
        while sid in manager.sessions and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sid not in manager.sessions
        assert all(w.instances == 0 for w in pool.workers())
        expired = http.post("/step", json={"action": {"message": "a"}, "session_id": sid})
        assert expired.status_code == 404 and "idle" in expired.json()["data"]["message"]


def test_an_idle_websocket_session_is_told_and_closed(serve) -> None:
    with serve(idle_timeout_s=0.3) as (url, manager), connect(ws_url(url)) as ws:
        ws.send('{"type": "reset", "data": {"seed": 1}}')
        assert recv(ws)["type"] == "observation"
        told = recv(ws)  # nothing sent: the server speaks first, once the session is idle
        assert told["data"]["code"] == "SESSION_CLOSED" and "idle" in told["data"]["message"]
        with pytest.raises(ConnectionClosed) as closed:
            recv(ws)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001  # going away
        assert manager.sessions == {}
