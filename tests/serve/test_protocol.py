"""``spade serve`` speaks OpenEnv 0.10's protocol: its own client plays SPADE environments
over the WebSocket, plain HTTP keeps sessions by id, and the schema, health and metadata
routes answer in OpenEnv's shapes."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from openenv.core.env_server.types import HealthResponse, SchemaResponse, WSErrorCode
from openenv.core.generic_client import GenericEnvClient
from spade_serve.client import SpadeEnvClient
from spade_serve.errors import RemoteError
from spade_serve.models import SpadeObservation, SpadeState

from .envs import served


def play(url: str, actions: list[str], seed: int | None = None) -> list[dict]:
    """Reset then step ``actions`` with OpenEnv's GenericEnvClient; each answer's
    observation dict (plus reward and done)."""

    async def go() -> list[dict]:
        out = []
        async with GenericEnvClient(base_url=url) as env:
            result = await env.reset(**({"seed": seed} if seed is not None else {}))
            out.append({**result.observation, "reward": result.reward, "done": result.done})
            for action in actions:
                result = await env.step({"message": action})
                out.append({**result.observation, "reward": result.reward, "done": result.done})
        return out

    return asyncio.run(go())


def test_openenv_generic_client_plays_an_episode_to_its_end(serve) -> None:
    with serve() as (url, manager):
        steps = play(url + "/envs/counter-v1", ["a", "b", "win"], seed=7)
    first, *rest, last = steps
    assert first["text"].startswith("secret ") and first["done"] is False and first["reward"] is None
    assert [s["text"].split(":")[0] for s in rest] == ["turn 1", "turn 2"]
    assert last["reward"] == 1.0 and last["done"] is True
    assert last["terminated"] is True and last["truncated"] is False
    assert last["metadata"]["terminated"] is True and last["metadata"]["truncated"] is False
    assert last["metadata"]["step_count"] == 3 and last["metadata"]["env_id"] == "counter-v1"


def test_truncation_at_max_turns_is_told_apart_from_termination(serve) -> None:
    with serve([served(max_turns=2)]) as (url, _):
        steps = play(url, ["a", "b"], seed=1)  # the only env: the root routes serve it
    last = steps[-1]
    assert last["done"] is True and last["truncated"] is True and last["terminated"] is False
    assert last["metadata"] == {**last["metadata"], "truncated": True, "terminated": False}


def test_seeds_are_honoured_across_sessions(serve) -> None:
    with serve() as (url, _):
        a = play(url, [], seed=11)[0]["text"]
        b = play(url, [], seed=11)[0]["text"]
        c = play(url, [], seed=12)[0]["text"]
        unseeded = play(url, [])[0]
    assert a == b != c
    assert isinstance(unseeded["metadata"]["seed"], int)  # drawn, and reported so it can be replayed


def test_plain_http_reset_then_step_plays_one_episode(serve) -> None:
    with serve() as (url, manager), httpx.Client(base_url=url) as http:
        reset = http.post("/envs/counter-v1/reset", json={"seed": 3})
        assert reset.status_code == 200
        sid = reset.headers["X-Spade-Session"]
        assert reset.json()["observation"]["metadata"]["session_id"] == sid
        one = http.post("/envs/counter-v1/step", json={"action": {"message": "a"}, "session_id": sid}).json()
        two = http.post("/step", json={"action": {"message": "win"}}, headers={"X-Spade-Session": sid}).json()
        state = http.get("/state", params={"session_id": sid}).json()
        assert one["observation"]["text"].startswith("turn 1") and two["observation"]["text"].startswith("turn 2")
        assert two["done"] is True and two["observation"]["terminated"] is True
        assert SpadeState.model_validate(state).step_count == 2
        again = http.post("/step", json={"action": {"message": "a"}, "session_id": sid})
        assert again.status_code == 409 and again.json()["data"]["code"] == "EPISODE_STATE"
        replay = http.post("/reset", json={"seed": 3, "session_id": sid})
        assert replay.json()["observation"]["text"] == reset.json()["observation"]["text"]
        assert http.delete(f"/sessions/{sid}").status_code == 200
        gone = http.post("/step", json={"action": {"message": "a"}, "session_id": sid})
        assert gone.status_code == 404 and gone.json()["data"]["code"] == "SESSION_NOT_FOUND"
        assert manager.sessions == {}


def test_schema_health_metadata_and_listing_use_openenv_shapes(serve) -> None:
    with serve() as (url, _), httpx.Client(base_url=url) as http:
        schema = SchemaResponse.model_validate(http.get("/envs/counter-v1/schema").json())
        assert schema.action["properties"]["message"]["type"] == "string"
        assert {"text", "terminated", "truncated", "metadata"} <= set(schema.observation["properties"])
        assert HealthResponse.model_validate(http.get("/health").json()).status.value == "healthy"
        meta = http.get("/envs/counter-v1/metadata").json()
        assert meta["name"] == "counter-v1" and meta["version"] == "1"
        listing = http.get("/envs").json()
        assert [e["id"] for e in listing["envs"]] == ["counter-v1"] and listing["whole_registry"] is False


def test_typed_client_returns_spade_models_and_raises_remote_errors(serve) -> None:
    async def go(url: str) -> tuple[SpadeObservation, SpadeState, RemoteError]:
        async with SpadeEnvClient(url, env_id="counter-v1") as env:
            await env.reset(seed=2)
            result = await env.step("win")
            state = await env.state()
            with pytest.raises(RemoteError) as over:
                await env.step("again")
            return result.observation, state, over.value

    with serve() as (url, _):
        obs, state, over = asyncio.run(go(url))
    assert isinstance(obs, SpadeObservation) and obs.terminated and obs.done and obs.reward == 1.0
    assert state.step_count == 1 and state.terminated and state.env_id == "counter-v1"
    assert over.code == "EPISODE_STATE"


@pytest.mark.parametrize(
    "message,code",
    [
        ("not json", WSErrorCode.INVALID_JSON.value),
        ('{"type": "teleport"}', WSErrorCode.UNKNOWN_TYPE.value),
        ('{"type": "step", "data": {"message": "a"}}', "EPISODE_STATE"),
        ('{"type": "reset", "data": {"seed": -1}}', "VALIDATION_ERROR"),
        ('{"type": "reset", "data": {"sede": 1}}', "VALIDATION_ERROR"),
        ('{"type": "step", "data": {"msg": "a"}}', "VALIDATION_ERROR"),
        ('{"type": "reset", "data": {"env_id": "nowhere-v1"}}', "UNKNOWN_ENV"),
    ],
)
def test_bad_websocket_messages_get_structured_errors_and_the_session_goes_on(serve, message: str, code: str) -> None:
    from websockets.sync.client import connect

    with serve() as (url, _), connect(url.replace("http", "ws") + "/envs/counter-v1/ws") as ws:
        ws.send(message)
        reply = __import__("json").loads(ws.recv(timeout=10))
        assert reply["type"] == "error" and reply["data"]["code"] == code
        assert "Traceback" not in reply["data"]["message"]
        ws.send('{"type": "reset", "data": {"seed": 1}}')
        assert __import__("json").loads(ws.recv(timeout=10))["type"] == "observation"


def test_unknown_envs_and_missing_sessions_are_named(serve) -> None:
    with serve([served("one"), served("two")]) as (url, _), httpx.Client(base_url=url) as http:
        unknown = http.post("/envs/three-v1/reset", json={})
        assert unknown.status_code == 404 and "three-v1" in unknown.json()["data"]["message"]
        ambiguous = http.post("/reset", json={})
        assert ambiguous.status_code == 404 and "/envs/<env_id>" in ambiguous.json()["data"]["message"]
        named = http.post("/reset", json={"env_id": "two-v1", "seed": 1})
        assert named.status_code == 200 and named.json()["observation"]["metadata"]["env_id"] == "two-v1"
        no_session = http.post("/envs/one-v1/step", json={"action": {"message": "a"}})
        assert no_session.status_code == 422 and "X-Spade-Session" in no_session.json()["data"]["message"]
        not_json = http.post("/envs/one-v1/reset", content=b"{", headers={"content-type": "application/json"})
        assert not_json.status_code == 422 and not_json.json()["data"]["code"] == "VALIDATION_ERROR"
