"""Faults stay inside their session: an environment that raises, hangs or loses its worker
ends (at most) its own session with a structured error naming the sandbox's error kind;
every other session goes on; a client that leaves mid-episode frees its worker."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time

from websockets.sync.client import connect

from .envs import COUNTER, served


def ws_url(url: str, env: str = "counter-v1") -> str:
    return url.replace("http://", "ws://") + f"/envs/{env}/ws"


def ask(ws, kind: str, data: dict | None = None) -> dict:
    ws.send(json.dumps({"type": kind, **({"data": data} if data is not None else {})}))
    return json.loads(ws.recv(timeout=30))


def hang_in_background(ws) -> tuple[threading.Thread, dict]:
    """Send a step that hangs the environment from a thread; its thread and the answer it
    will hold."""
    answer: dict = {}
    t = threading.Thread(target=lambda: answer.update(ask(ws, "step", {"message": "hang"})))
    t.start()
    return t, answer


def wait_until(cond, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_an_environment_that_raises_reports_env_code_and_keeps_its_session(serve) -> None:
    with serve() as (url, manager), connect(ws_url(url)) as ws:
        ask(ws, "reset", {"seed": 1})
        err = ask(ws, "step", {"message": "boom"})["data"]
        assert err["code"] == "EXECUTION_ERROR" and err["kind"] == "env_code" and err["session_closed"] is False
        assert "broke on purpose" in err["message"] and "Traceback" not in err["message"]
        assert ask(ws, "reset", {"seed": 1})["type"] == "observation"
        assert ask(ws, "step", {"message": "a"})["data"]["observation"]["text"].startswith("turn 1")
        assert len(manager.sessions) == 1


def test_a_hung_environment_ends_only_its_session_and_does_not_hold_up_the_others(serve) -> None:
    with serve() as (url, manager), connect(ws_url(url)) as hung, connect(ws_url(url)) as other:
        ask(hung, "reset", {"seed": 1})
        ask(other, "reset", {"seed": 2})
        t, answer = hang_in_background(hung)
        time.sleep(0.1)
        latencies = []
        while t.is_alive():  # the other session plays on while the hung call waits for its deadline
            start = time.perf_counter()
            reply = ask(other, "step", {"message": "a"})
            latencies.append(time.perf_counter() - start)
            if reply["data"]["done"]:
                ask(other, "reset", {"seed": 2})
        t.join()
        err = answer["data"]
        assert err["kind"] == "timeout" and err["session_closed"] is True
        # The spinning worker takes one of the machine's cores; the other session is slowed
        # by that at most, never blocked behind the hung call.
        assert len(latencies) >= 10, f"only {len(latencies)} steps of the other session during the hang"
        assert sorted(latencies)[len(latencies) // 2] < 0.25
        assert len(manager.sessions) == 1  # the hung one is gone, the other remains
        # the hung socket is still usable: a reset opens a fresh session on a fresh worker
        assert ask(hung, "reset", {"seed": 1})["type"] == "observation"
        assert len(manager.sessions) == 2


def test_a_worker_killed_mid_session_fails_only_that_session(serve, pool) -> None:
    with serve() as (url, manager), connect(ws_url(url)) as victim, connect(ws_url(url)) as bystander:
        ask(victim, "reset", {"seed": 1})
        ask(bystander, "reset", {"seed": 2})
        ask(victim, "step", {"message": "a"})
        (sid,) = [s.id for s in manager.sessions.values() if s.seed == 1]
        pid = pool.worker_of(manager.sessions[sid].instance.handle).pid
        os.kill(pid, signal.SIGKILL)
        err = ask(victim, "step", {"message": "a"})["data"]
        assert err["code"] == "EXECUTION_ERROR" and err["kind"] == "crash" and err["session_closed"] is True
        assert sid not in manager.sessions
        assert ask(bystander, "step", {"message": "a"})["data"]["observation"]["text"].startswith("turn 1")


def test_sessions_sharing_a_worker_fail_together_and_no_others(serve, pool) -> None:
    with serve(sessions_per_worker=2) as (url, manager):
        with connect(ws_url(url)) as a, connect(ws_url(url)) as b, connect(ws_url(url)) as c:
            for i, ws in enumerate((a, b, c)):
                ask(ws, "reset", {"seed": i})
            groups = {s.seed: s.group for s in manager.sessions.values()}
            assert groups == {0: 0, 1: 0, 2: 1}
            first = next(s for s in manager.sessions.values() if s.seed == 0)
            os.kill(pool.worker_of(first.instance.handle).pid, signal.SIGKILL)
            assert ask(a, "step", {"message": "x"})["data"]["kind"] == "crash"
            assert ask(b, "step", {"message": "x"})["data"]["kind"] == "crash"
            assert ask(c, "step", {"message": "x"})["type"] == "observation"


def test_a_client_that_disconnects_mid_episode_frees_its_worker(serve, pool) -> None:
    with serve([served("left")]) as (url, manager), connect(ws_url(url, "left-v1")) as ws:
        ask(ws, "reset", {"seed": 1})
        ask(ws, "step", {"message": "a"})
        handle = next(iter(manager.sessions.values())).instance.handle
        assert pool.worker_of(handle).instances == 1
        ws.socket.shutdown(socket.SHUT_RDWR)  # gone without a close frame, as a crashed client
        assert wait_until(lambda: not manager.sessions)
        assert all(w.instances == 0 for w in pool.workers())


#: A seed that imports what the sandbox's allow-list refuses (a plugin's own modules), and
#: hangs on "hang".
TRUSTED_SEED = "import spade_core.actions  # not on the sandbox's allow-list\n" + COUNTER


def test_a_trusted_seed_plays_in_a_trusted_worker_and_a_hang_is_stopped_at_the_deadline(serve) -> None:
    seed = served("trusted_counter", TRUSTED_SEED, kind="seed")
    with serve(envs=[seed], seeds_in_process=True, call_timeout_s=1.5) as (url, manager):
        with connect(ws_url(url, seed.id)) as ws:
            assert ask(ws, "reset", {"seed": 1})["type"] == "observation"
            (session,) = manager.sessions.values()
            assert manager.factory.trusted_pool.worker_of(session.instance.handle) is not None
            assert ask(ws, "step", {"message": "a"})["data"]["observation"]["text"].startswith("turn 1")
            started = time.monotonic()
            err = ask(ws, "step", {"message": "hang"})["data"]
            assert err["kind"] == "timeout" and err["session_closed"] is True
            assert time.monotonic() - started < 10, "stopped at the server's call deadline"
            assert ask(ws, "reset", {"seed": 1})["type"] == "observation", "a fresh trusted worker"
    with serve(envs=[seed]) as (url, _manager), connect(ws_url(url, seed.id)) as ws:
        refused = ask(ws, "reset", {"seed": 1})
        assert refused["type"] == "error" and refused["data"]["kind"] == "static", "untrusted, the allow-list refuses it"
