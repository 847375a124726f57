"""OpenEnv 0.10's Task API on ``spade serve``: an environment's tasks are its seeds and, for
a seed environment that declares ``KNOBS``, its knob settings; a reset with ``split`` and
``index`` plays one. Driven over HTTP with OpenEnv's own request models and played with
OpenEnv's ``GenericEnvClient`` (WebSocket) and over plain HTTP."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from openenv.core.env_server.types import GetTaskRangeRequest, GetTaskRequest, ListTasksRequest, NumTasksRequest
from openenv.core.generic_client import GenericEnvClient
from spade_serve.tasks import MAX_TASKS_PER_ANSWER, SEEDS_PER_SETTING, TEST_SEED_BASE

from .envs import served
from .subprocess_server import spade_serve as spade_serve_process

#: A seed environment with knobs: its first observation shows its class constants.
KNOBBED = '''
import random


class DialEnv:
    SIZE = 3
    MODE = "a"
    KNOBS = {"SIZE": (int, 2, 5), "MODE": (str, "a", "b")}

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(0, 10**9)
        return f"size {self.SIZE} mode {self.MODE} secret {self.secret}", {}

    def step(self, action):
        return f"{action} at size {self.SIZE}", 1.0, True, False, {}

    def solution(self):
        return ["x"]
'''


def dial():
    env = served("dial", KNOBBED, kind="seed")
    return type(env)(env.kind, env.metadata.model_copy(update={"class_name": "DialEnv"}), env.source, ())


def post(http: httpx.Client, path: str, body: object) -> httpx.Response:
    return http.post(path, json=body.model_dump() if hasattr(body, "model_dump") else body)


def test_splits_counts_and_tasks_by_index_and_range(serve) -> None:
    with serve([dial(), served()]) as (url, _), httpx.Client(base_url=url, timeout=30) as http:
        assert http.get("/list_environments").json() == ["dial-v1", "counter-v1"]
        assert http.get("/dial-v1/splits").json() == [{"name": "train", "type": "train"}, {"name": "test", "type": "test"}]
        # the class as written, SIZE at each bound, MODE at its other choice
        assert post(http, "/dial-v1/num_tasks", NumTasksRequest(split="train")).json() == {"num_tasks": 4 * SEEDS_PER_SETTING}
        assert post(http, "/counter-v1/num_tasks", NumTasksRequest(split="test")).json() == {"num_tasks": SEEDS_PER_SETTING}
        first = post(http, "/dial-v1/task", GetTaskRequest(split="train", index=0)).json()["task"]
        assert first == {"id": "dial-v1/train/0", "index": 0, "split": "train", "env_id": "dial-v1", "seed": 0, "knobs": {}}
        held_out = post(http, "/dial-v1/task", GetTaskRequest(split="test", index=SEEDS_PER_SETTING + 7)).json()["task"]
        assert (held_out["seed"], held_out["knobs"]) == (TEST_SEED_BASE + 7, {"SIZE": 2})
        span = post(http, "/dial-v1/task_range", GetTaskRangeRequest(split="train", start=-2)).json()["tasks"]
        assert [(t["index"], t["knobs"]) for t in span] == [(4 * SEEDS_PER_SETTING - 2, {"MODE": "b"}), (4 * SEEDS_PER_SETTING - 1, {"MODE": "b"})]
        listed = post(http, "/dial-v1/tasks", ListTasksRequest(split="train")).json()
        assert listed["env_name"] == "dial-v1" and len(listed["tasks"]) == MAX_TASKS_PER_ANSWER
        # the same under /envs/<id>/, where the environment named must be the route's
        assert http.get("/envs/dial-v1/list_environments").json() == ["dial-v1"]
        assert post(http, "/envs/dial-v1/dial-v1/task", GetTaskRequest(split="test", index=0)).json()["task"]["seed"] == TEST_SEED_BASE
        assert http.get("/envs/dial-v1/counter-v1/splits").status_code == 404


def test_bad_task_requests_are_answered_as_openenv_does(serve) -> None:
    with serve([dial()]) as (url, _), httpx.Client(base_url=url, timeout=30) as http:
        out_of_range = post(http, "/dial-v1/task", {"split": "train", "index": 4 * SEEDS_PER_SETTING})
        assert out_of_range.status_code == 400 and "out of range" in out_of_range.json()["data"]["message"]
        assert post(http, "/dial-v1/num_tasks", {"split": "validation"}).status_code == 400
        assert post(http, "/dial-v1/task_range", {"split": "train", "start": 0, "stop": MAX_TASKS_PER_ANSWER + 1}).status_code == 400
        assert post(http, "/dial-v1/task", {"split": "train"}).status_code == 422  # no index
        assert post(http, "/nothing-v1/num_tasks", {"split": "train"}).status_code == 404


def test_a_reset_by_task_plays_its_seed_at_its_knobs_over_the_websocket_and_http(serve) -> None:
    with serve([dial()]) as (url, manager), httpx.Client(base_url=url, timeout=30) as http:
        size5 = post(http, "/dial-v1/task", {"split": "test", "index": 2 * SEEDS_PER_SETTING + 3}).json()["task"]
        assert size5["knobs"] == {"SIZE": 5}

        async def play() -> list[dict]:
            seen = []
            async with GenericEnvClient(base_url=url) as env:
                for index in (3, 2 * SEEDS_PER_SETTING + 3, 3):  # as written, at SIZE 5, as written again
                    result = await env.reset(split="test", index=index)
                    seen.append(result.observation)
                result = await env.step({"message": "x"})
                seen.append(result.observation)
            return seen

        as_written, at_size5, again, stepped = asyncio.run(play())
        assert as_written["text"].startswith("size 3 mode a") and at_size5["text"].startswith("size 5 mode a")
        assert as_written["text"].split("secret")[1] == at_size5["text"].split("secret")[1] == again["text"].split("secret")[1]
        assert at_size5["metadata"]["seed"] == TEST_SEED_BASE + 3 and at_size5["metadata"]["knobs"] == {"SIZE": 5}
        assert "knobs" not in again["metadata"] and stepped["text"] == "x at size 3"

        reset = http.post("/reset", json={"split": "test", "index": size5["index"]})
        assert reset.status_code == 200, reset.text
        body = reset.json()["observation"]
        assert body["text"] == at_size5["text"] and body["metadata"]["knobs"] == {"SIZE": 5}
        session = reset.headers["x-spade-session"]
        again_http = http.post("/reset", json={"session_id": session, "split": "test", "index": size5["index"] + 1})
        assert again_http.json()["observation"]["metadata"]["seed"] == TEST_SEED_BASE + 4
        # a task at another knob setting switches the session named to it: the same id plays on
        other_knobs = http.post("/reset", json={"session_id": session, "split": "test", "index": 3})
        assert other_knobs.status_code == 200 and other_knobs.headers["x-spade-session"] == session
        assert other_knobs.json()["observation"]["text"] == as_written["text"]
        assert "knobs" not in other_knobs.json()["observation"]["metadata"] and manager.sessions[session].env.knobs == ()
        clash = http.post("/reset", json={"split": "test", "index": 0, "seed": 5})
        assert clash.status_code == 400 and "plays seed" in clash.json()["data"]["message"]
        assert http.post("/reset", json={"split": "test"}).status_code == 400


@pytest.mark.slow
def test_spade_serve_offers_a_registry_seeds_knob_settings_as_tasks() -> None:
    """The real command and a real seed: code_breaker declares LENGTH (3..6) and DIGITS
    (five alphabets, "123456" as written): 1 + 2 + 4 settings."""
    with spade_serve_process("code_breaker-v1") as (url, _), httpx.Client(base_url=url, timeout=60) as http:
        assert post(http, "/code_breaker-v1/num_tasks", {"split": "train"}).json() == {"num_tasks": 7 * SEEDS_PER_SETTING}
        firsts = [post(http, "/code_breaker-v1/task", {"split": "train", "index": s * SEEDS_PER_SETTING}) for s in range(7)]
        knobs = [r.json()["task"]["knobs"] for r in firsts]
        assert knobs == [{}, {"LENGTH": 3}, {"LENGTH": 6}, {"DIGITS": "1234"}, {"DIGITS": "12345"}, {"DIGITS": "1234567"}, {"DIGITS": "12345678"}]

        async def first_observation(index: int) -> str:
            async with GenericEnvClient(base_url=url) as env:
                return (await env.reset(split="train", index=index)).observation["text"]

        assert "hidden 4-digit code" in asyncio.run(first_observation(0))
        assert "hidden 6-digit code" in asyncio.run(first_observation(2 * SEEDS_PER_SETTING))
