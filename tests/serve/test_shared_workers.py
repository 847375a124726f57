"""Sessions sharing a sandbox worker (``sessions_per_worker > 1``): the session whose call
killed the worker ends; the others are restored on a fresh worker by replaying their
episode, checked against what their clients saw; a session kept waiting by another's hung
call moves to a worker of its own; an environment that does not replay alike ends only
the session that could not be restored (real servers, real workers)."""

from __future__ import annotations

import json
import threading
import time
from contextlib import ExitStack

from websockets.sync.client import connect

from .envs import served
from .test_faults import ask, hang_in_background, ws_url

#: Like the counter, but every observation also shows a count kept at module level: all
#: instances of one worker share it, so a replay on a fresh worker sees other numbers.
SHARED_COUNT = '''
import random

PLAYED = [0]


class CounterEnv:
    def reset(self, seed=None):
        self.turn = 0
        return f"seed {seed}", {}

    def step(self, action):
        if action == "hang":
            while True:
                pass
        PLAYED[0] += 1
        self.turn += 1
        return f"turn {self.turn}, step {PLAYED[0]} of this worker", 0.0, False, False, {}
'''


def text(reply: dict) -> str:
    assert reply["type"] == "observation", reply
    return reply["data"]["observation"]["text"]


def test_the_session_whose_call_killed_the_worker_ends_and_the_others_are_restored(serve, pool) -> None:
    # move_after is long: the bystander waits behind the hung call, so it is restored
    # after the worker's death rather than moved before it.
    with serve(sessions_per_worker=4, move_after_s=60) as (url, manager):
        with connect(ws_url(url)) as culprit, connect(ws_url(url)) as bystander:
            ask(culprit, "reset", {"seed": 1})
            first = text(ask(bystander, "reset", {"seed": 2}))
            seen = [text(ask(bystander, "step", {"message": m})) for m in ("a", "b")]
            assert ask(bystander, "step", {"message": "boom"})["data"]["kind"] == "env_code"  # replayed too
            seen.append(text(ask(bystander, "step", {"message": "c"})))
            (mine,) = [s for s in manager.sessions.values() if s.seed == 2]
            worker_before = pool.worker_of(mine.instance.handle).pid
            assert len({s.group for s in manager.sessions.values()}) == 1
            t, answer = hang_in_background(culprit)
            time.sleep(0.2)
            after = text(ask(bystander, "step", {"message": "d"}))  # waits for the deadline, then is restored
            t.join()
            assert answer["data"]["kind"] == "timeout" and answer["data"]["session_closed"] is True
            assert first.startswith("secret ") and seen[-1].startswith("turn 3: c")
            assert after == f"turn 4: d ({first.split()[1]})"  # the same episode, one turn on
            assert pool.worker_of(mine.instance.handle).pid != worker_before
            assert [s.seed for s in manager.sessions.values()] == [2]
            state = ask(bystander, "state")["data"]
            assert state["step_count"] == 4 and state["seed"] == 2  # a, b, c, d (the raising step is no turn)


def test_a_session_kept_waiting_by_a_hung_call_moves_to_its_own_worker(serve, pool) -> None:
    with serve(sessions_per_worker=4, move_after_s=0.2) as (url, manager):
        with connect(ws_url(url)) as hung, connect(ws_url(url)) as other:
            ask(hung, "reset", {"seed": 1})
            first = text(ask(other, "reset", {"seed": 2}))
            text(ask(other, "step", {"message": "a"}))
            (mine,) = [s for s in manager.sessions.values() if s.seed == 2]
            group_before = mine.group
            t, answer = hang_in_background(hung)
            time.sleep(0.1)
            latencies, texts = [], []
            while t.is_alive():
                start = time.perf_counter()
                reply = ask(other, "step", {"message": "a"})
                latencies.append(time.perf_counter() - start)
                if reply["data"]["done"]:
                    ask(other, "reset", {"seed": 2})
                else:
                    texts.append(text(reply))
            t.join()
            assert answer["data"]["kind"] == "timeout"
            assert mine.group != group_before  # it moved, replayed: the episode went on
            assert texts[0] == f"turn 2: a ({first.split()[1]})"
            assert len(latencies) >= 10 and sorted(latencies)[len(latencies) // 2] < 0.25
            assert max(latencies) < 1.4  # the first waited move_after_s, never the call deadline (1.5 s)


def test_a_session_that_does_not_replay_alike_ends_alone(serve, pool) -> None:
    env = served("shared", SHARED_COUNT)
    with serve([env], sessions_per_worker=4, move_after_s=60) as (url, manager):
        with connect(ws_url(url, "shared-v1")) as culprit, connect(ws_url(url, "shared-v1")) as a, \
                connect(ws_url(url, "shared-v1")) as b:
            for i, ws in enumerate((culprit, a, b)):
                ask(ws, "reset", {"seed": i})
            text(ask(a, "step", {"message": "x"}))  # step 1 of the worker
            text(ask(b, "step", {"message": "x"}))  # step 2: b's replay on a fresh worker says 1
            t, _ = hang_in_background(culprit)
            time.sleep(0.2)
            assert text(ask(a, "step", {"message": "y"})) == "turn 2, step 2 of this worker"  # replayed alike
            err = ask(b, "step", {"message": "y"})["data"]
            t.join()
            assert err["kind"] == "crash" and err["session_closed"] is True
            assert "could not be restored" in err["message"] and "step 1" in err["message"]
            assert "not deterministic" in err["message"]
            assert len(manager.sessions) == 1
            assert ask(b, "reset", {"seed": 5})["type"] == "observation"  # the socket opens a new one


def test_one_call_at_a_time_per_shared_worker_keeps_every_episode_apart(serve, pool) -> None:
    """Many sessions of one client on one worker, stepping at once: each sees its own turns."""
    with serve(sessions_per_worker=8) as (url, manager):
        with ExitStack() as stack:
            sockets = [stack.enter_context(connect(ws_url(url))) for _ in range(8)]
            for i, ws in enumerate(sockets):
                ask(ws, "reset", {"seed": i})
            assert len({s.group for s in manager.sessions.values()}) == 1
            results: dict[int, list[str]] = {}

            def play(i: int) -> None:
                results[i] = [text(ask(sockets[i], "step", {"message": f"m{i}"})).split(":")[0] for _ in range(4)]

            threads = [threading.Thread(target=play, args=(i,)) for i in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert all(results[i] == ["turn 1", "turn 2", "turn 3", "turn 4"] for i in range(8)), json.dumps(results)
