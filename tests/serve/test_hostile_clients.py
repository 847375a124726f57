"""A hostile client costs the server a bounded amount: unfinished requests are closed at
the read deadline and past the connection cap (``/health`` keeps answering a flood of
them), an episode's replay log is bounded in actions and bytes and a session is restored a
bounded number of times per episode, steps that raise end the episode at ``max_turns`` of
them, and the server's memory under a client sending the largest actions it may stays
near a good client's, with or without shared workers."""

from __future__ import annotations

import json
import socket
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
import psutil
import pytest
from websockets.sync.client import connect

from .subprocess_server import spade_serve
from .test_faults import ask, hang_in_background, ws_url
from .test_shared_workers import text


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def partial_request(port: int) -> socket.socket:
    """A connection that sent the start of a request's headers, and no more."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(f"GET /envs HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: 1\r\n".encode())
    return s


def closed_by_server(s: socket.socket, within: float) -> bool:
    s.settimeout(within)
    try:
        s.recv(4096)  # the close (b""), or a 503 before it
        return True
    except TimeoutError:
        return False
    except OSError:
        return True


# --- unfinished requests ------------------------------------------------------------------
def test_a_flood_of_unfinished_requests_leaves_health_answering(tmp_path: Path) -> None:
    """300 sockets trickling headers at a server whose open-file limit is 256 (as a
    deployment's ulimit may be): past the connection cap the oldest unfinished one makes
    room, so /health (and anyone with a whole request) is answered at once. Before the cap
    the server ran out of descriptors and answered nobody."""
    with spade_serve("polynomial_probe-v1", open_files=256, log=tmp_path / "serve.log") as (url, proc):
        port = port_of(url)
        socks = [partial_request(port) for _ in range(300)]
        stop = threading.Event()

        def trickle() -> None:
            while not stop.is_set():
                for s in socks:
                    try:
                        s.send(b"X-More: 1\r\n")
                    except OSError:
                        pass
                stop.wait(0.5)

        dripper = threading.Thread(target=trickle, daemon=True)
        dripper.start()
        try:
            time.sleep(1.0)
            for _ in range(3):
                start = time.monotonic()
                health = httpx.get(url + "/health", timeout=5)
                assert health.status_code == 200 and time.monotonic() - start < 5
            assert psutil.Process(proc.pid).num_fds() < 256
        finally:
            stop.set()
            dripper.join()
            for s in socks:
                s.close()


def test_a_request_read_too_slowly_is_closed_at_the_read_deadline(serve) -> None:
    with serve(read_timeout_s=0.5) as (url, manager):
        port = port_of(url)
        start = time.monotonic()
        slow_headers = partial_request(port)
        for _ in range(3):  # bytes keep coming: the deadline is not moved by them
            time.sleep(0.1)
            slow_headers.send(b"X-More: 1\r\n")
        assert closed_by_server(slow_headers, within=2.0)
        assert 0.4 < time.monotonic() - start < 2.0
        slow_body = socket.create_connection(("127.0.0.1", port))
        slow_body.sendall(
            f"POST /reset HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            "Content-Length: 64\r\n\r\n{".encode()
        )
        assert closed_by_server(slow_body, within=2.0)
        silent = socket.create_connection(("127.0.0.1", port))  # says nothing at all
        assert closed_by_server(silent, within=2.0)
        assert manager.sessions == {}
        with httpx.Client(base_url=url) as http:  # a kept-alive client is not hurried
            for _ in range(3):
                assert http.get("/health").status_code == 200
                time.sleep(0.3)
            assert http.post("/reset", json={"seed": 1}).status_code == 200


def test_the_read_deadline_never_ends_a_websocket_or_a_request_being_answered(serve) -> None:
    """The deadline is for reading a request: a WebSocket (whose upgrade request h11 never
    saw the end of) and a request whose answer takes long are not closed by it."""
    with serve(read_timeout_s=0.5) as (url, _), connect(ws_url(url)) as ws, httpx.Client(base_url=url, timeout=30) as http:
        assert ask(ws, "reset", {"seed": 1})["type"] == "observation"
        sid = http.post("/reset", json={"seed": 1}).headers["X-Spade-Session"]
        time.sleep(1.2)
        assert text(ask(ws, "step", {"message": "a"})).startswith("turn 1")
        slow = http.post("/step", json={"action": {"message": "hang"}, "session_id": sid})  # answered at 1.5 s
        assert slow.status_code == 500 and slow.json()["data"]["kind"] == "timeout"
        time.sleep(0.8)
        assert text(ask(ws, "step", {"message": "b"})).startswith("turn 2")


def test_past_the_connection_cap_unfinished_requests_make_room_and_sessions_stay(serve) -> None:
    with serve(max_connections=16) as (url, manager), connect(ws_url(url)) as ws:
        assert ask(ws, "reset", {"seed": 1})["type"] == "observation"
        port = port_of(url)
        socks = [partial_request(port) for _ in range(100)]
        try:
            start = time.monotonic()
            assert httpx.get(url + "/health", timeout=5).status_code == 200
            assert time.monotonic() - start < 2
            assert text(ask(ws, "step", {"message": "a"})).startswith("turn 1")  # the session was not closed
            assert sum(closed_by_server(s, within=0.05) for s in socks) >= 100 - 16
        finally:
            for s in socks:
                s.close()


def test_at_the_cap_with_nothing_to_close_a_connection_is_answered_busy(serve) -> None:
    with serve(max_connections=8) as (url, _), ExitStack() as stack:
        sockets = [stack.enter_context(connect(ws_url(url))) for _ in range(8)]
        busy = httpx.get(url + "/health", timeout=5)
        assert busy.status_code == 503 and busy.json()["data"]["code"] == "BUSY"
        sockets[0].close()
        time.sleep(0.2)
        assert httpx.get(url + "/health", timeout=5).status_code == 200


# --- replaying shared workers -------------------------------------------------------------
def test_an_episode_past_the_replay_bound_ends_instead_of_being_replayed(serve, pool) -> None:
    with serve(sessions_per_worker=4, move_after_s=60, max_replay_steps=2) as (url, manager):
        with connect(ws_url(url)) as culprit, connect(ws_url(url)) as long, connect(ws_url(url)) as short:
            ask(culprit, "reset", {"seed": 1})
            ask(long, "reset", {"seed": 2})
            first = text(ask(short, "reset", {"seed": 3}))
            for m in ("a", "b", "c"):
                text(ask(long, "step", {"message": m}))
            text(ask(short, "step", {"message": "a"}))
            (kept,) = [s for s in manager.sessions.values() if s.seed == 2]
            assert kept.replay is None and "replay bound" in (kept.replay_dropped or "")  # nothing held past it
            t, _ = hang_in_background(culprit)
            time.sleep(0.2)
            ended = ask(long, "step", {"message": "d"})["data"]  # waits for its worker: a move would replay
            t.join()
            assert ended["kind"] == "crash" and ended["session_closed"] is True
            assert "replay bound" in ended["message"] and "max_replay_steps" in ended["message"]
            assert text(ask(short, "step", {"message": "b"})) == f"turn 2: b ({first.split()[1]})"  # restored
            assert ask(long, "reset", {"seed": 5})["type"] == "observation"  # a new episode starts afresh


def test_the_replay_log_is_bounded_in_bytes(serve) -> None:
    with serve(sessions_per_worker=4, max_replay_bytes=4096) as (url, manager), connect(ws_url(url)) as ws:
        ask(ws, "reset", {"seed": 1})
        (session,) = manager.sessions.values()
        text(ask(ws, "step", {"message": "é" * 1000}))  # 2,000 bytes of UTF-8
        assert session.replay is not None and session.replay_bytes == 2000
        text(ask(ws, "step", {"message": "é" * 1500}))
        assert session.replay is None and session.replay_bytes == 0 and "4096 bytes" in (session.replay_dropped or "")
        ask(ws, "reset", {"seed": 1})
        assert session.replay is not None and session.replay_dropped is None  # a new episode is kept again


def test_a_session_is_restored_at_most_max_restores_times_per_episode(serve, pool) -> None:
    with serve(sessions_per_worker=4, move_after_s=60, max_restores=1) as (url, manager):
        with connect(ws_url(url)) as culprit, connect(ws_url(url)) as bystander:
            ask(culprit, "reset", {"seed": 1})
            ask(bystander, "reset", {"seed": 2})
            text(ask(bystander, "step", {"message": "a"}))
            for round_ in range(2):
                t, answer = hang_in_background(culprit)
                time.sleep(0.2)
                reply = ask(bystander, "step", {"message": "b"})
                t.join()
                assert answer["data"]["kind"] == "timeout"
                if round_ == 0:
                    assert text(reply).startswith("turn 2: b")  # restored once
                    ask(culprit, "reset", {"seed": 1})  # the culprit's socket opens a new session
                else:
                    assert reply["data"]["kind"] == "crash" and "max_restores = 1" in reply["data"]["message"]


def test_steps_that_raise_end_the_episode_at_max_turns_of_them(serve) -> None:
    """A raising step is no turn, so before this a client could step a raising
    environment without end (and, with shared workers, grow its replay log without end)."""
    with serve() as (url, manager), connect(ws_url(url)) as ws:  # the counter: max_turns 5
        ask(ws, "reset", {"seed": 1})
        text(ask(ws, "step", {"message": "a"}))
        errors = [ask(ws, "step", {"message": "boom"})["data"] for _ in range(5)]
        assert all(e["kind"] == "env_code" and e["session_closed"] is False for e in errors)
        assert "episode is over" not in errors[3]["message"]
        assert "episode is over (truncated)" in errors[4]["message"] and "5 of its steps raised" in errors[4]["message"]
        state = ask(ws, "state")["data"]
        assert state["truncated"] is True and state["step_count"] == 1
        assert ask(ws, "step", {"message": "a"})["data"]["code"] == "EPISODE_STATE"
        assert text(ask(ws, "reset", {"seed": 1})).startswith("secret ")
        assert text(ask(ws, "step", {"message": "a"})).startswith("turn 1")


# --- memory under a hostile client --------------------------------------------------------
#: The largest action the sandbox takes (max_action_chars 65,536), of 4-byte characters.
HOSTILE = "\U0001f600" * 65_000
GOOD = r"\boxed{query 1}"


def rss_growth(url: str, pid: int, action: str, requests: int) -> int:
    """Play ``requests`` requests of ``action`` (a new session every 11 steps, all kept
    open, as a client holding many episodes would); the server's RSS growth, bytes."""
    proc = psutil.Process(pid)
    target = url.replace("http://", "ws://") + "/envs/polynomial_probe-v1/ws"
    before = proc.memory_info().rss
    with ExitStack() as stack:
        sent, ws, turns = 0, None, 0
        while sent < requests:
            if ws is None or turns == 11:
                ws = stack.enter_context(connect(target, max_size=None))
                ask(ws, "reset", {"seed": 1})
                sent, turns = sent + 1, 0
                continue
            ws.send(json.dumps({"type": "step", "data": {"message": action}}, ensure_ascii=False))
            assert json.loads(ws.recv(timeout=30))["type"] == "observation"
            sent, turns = sent + 1, turns + 1
        time.sleep(0.3)
        return proc.memory_info().rss - before


@pytest.mark.parametrize("per_worker", [1, 16])
def test_a_hostile_client_grows_the_server_about_as_much_as_a_good_one(per_worker: int, tmp_path: Path) -> None:
    """Before the replay bound, 150 such requests grew a server of 16 sessions per worker
    by about 76 MiB (each action kept, with its UTF-8 copy, for replaying), a good
    client's by under 1 MiB."""
    with spade_serve("polynomial_probe-v1", "--sessions-per-worker", str(per_worker), log=tmp_path / "serve.log") as (
        url,
        proc,
    ):
        rss_growth(url, proc.pid, GOOD, 24)  # warm: the first worker, the call threads
        good = rss_growth(url, proc.pid, GOOD, 150)
        hostile = rss_growth(url, proc.pid, HOSTILE, 150)
    assert hostile - good < 24 * 2**20, (good / 2**20, hostile / 2**20)
