"""MCP sessions at a Task API task: ``initialize`` at ``/mcp?split=&index=`` (the ``mcp``
SDK's client), ``openenv/session/create`` with ``split`` and ``index``, and a reset of an
open MCP session to a task the way OpenEnv 0.10 picks one (``reset(split=, index=)``, which
its ``MCPToolClient`` sends over ``/ws?session_id=``, or ``/reset`` with the session's id).
Every way plays what the Task API's HTTP reset of the same task plays; an unknown task is a
specific error that opens nothing and leaves an open session playing as it was."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from spade_core.metadata import ActionFormat
from spade_serve.catalog import ServedEnv
from spade_serve.tasks import SEEDS_PER_SETTING, TEST_SEED_BASE
from websockets.sync.client import connect

from .test_faults import ask
from .test_mcp import mcp_client, rpc, wire
from .test_tasks import dial

#: Task ``test``/``SIZE5``: the dial at SIZE 5 (its setting 2), seed ``TEST_SEED_BASE + 3``.
SIZE5 = 2 * SEEDS_PER_SETTING + 3
#: Far past the dial's 4,000 tasks a split.
NO_TASK = 10**6
MCP_HEADER = "mcp-session-id"


def dial_text() -> ServedEnv:
    """tests/serve/test_tasks.py's dial (knobs SIZE 2..5, MODE a/b) as a free-text
    environment: ``act`` steps the action as it is."""
    env = dial()
    return ServedEnv(env.kind, env.metadata.model_copy(update={"action_format": ActionFormat.free_text}), env.source, ())


def http_task(http: httpx.Client, index: int) -> tuple[str, str]:
    """The first observation and the answer to the action "x" of task ``test``/``index``
    through the Task API's HTTP reset (a session of its own, closed after)."""
    reset = http.post("/envs/dial-v1/reset", json={"split": "test", "index": index})
    assert reset.status_code == 200, reset.text
    sid = reset.headers["X-Spade-Session"]
    step = http.post("/step", json={"action": {"message": "x"}}, headers={"X-Spade-Session": sid}).json()
    http.delete(f"/sessions/{sid}")
    return reset.json()["observation"]["text"], step["observation"]["text"]


def only_session(manager: Any) -> Any:
    (session,) = manager.sessions.values()
    return session


def test_the_sdk_client_opens_an_mcp_session_at_a_task_named_on_the_url(serve) -> None:
    with serve([dial_text()]) as (url, manager), httpx.Client(base_url=url, timeout=30) as http:
        first, answer = http_task(http, SIZE5)
        assert first.startswith("size 5 mode a") and answer == "x at size 5"

        async def go() -> tuple[str, dict[str, Any], tuple, int | None]:
            async with mcp_client(f"{url}/envs/dial-v1/mcp?split=test&index={SIZE5}") as mcp:
                init = await mcp.initialize()
                session = only_session(manager)
                result = wire(await mcp.call_tool("act", {"action": "x"}))
                return str(init.instructions), result, session.env.knobs, session.seed

        instructions, result, knobs, seed = asyncio.run(go())
        assert instructions.endswith("\n\n" + first)  # how to act, then the task's first observation
        assert result["content"][0]["text"] == answer and result["structuredContent"]["reward"] == 1.0
        assert knobs == (("SIZE", 5),) and seed == TEST_SEED_BASE + 3

        # openenv's session method takes the task as params (and answers its spec)
        created = rpc(http, "/envs/dial-v1/mcp", "openenv/session/create", {"split": "test", "index": SIZE5}).json()
        assert created["result"]["observation"] == first
        assert created["result"]["task"] == {"id": f"dial-v1/test/{SIZE5}", "index": SIZE5, "split": "test",
                                             "env_id": "dial-v1", "seed": TEST_SEED_BASE + 3, "knobs": {"SIZE": 5}}
        sid = created["result"]["session_id"]
        called = rpc(http, "/mcp", "tools/call", {"session_id": sid, "name": "act", "arguments": {"action": "x"}}).json()
        assert called["result"]["content"][0]["text"] == answer
        assert rpc(http, "/mcp", "openenv/session/close", {"session_id": sid}).json()["result"]["closed"] is True
        assert manager.sessions == {}


def test_an_unknown_task_is_a_json_rpc_error_that_opens_nothing(serve) -> None:
    with serve([dial_text()]) as (url, manager), httpx.Client(base_url=url, timeout=30) as http:
        for query, says in (
            (f"split=test&index={NO_TASK}", "out of range"),
            ("split=validation&index=0", "unknown split 'validation'"),
            ("split=test", "both split and index"),
            ("index=4", "both split and index"),
            ("split=test&index=-1", "index must be a task index"),
            ("split=test&index=three", "index must be a task index"),
            (f"split=test&index={SIZE5}&seed=5", f"plays seed {TEST_SEED_BASE + 3}, not 5"),
        ):
            refused = rpc(http, f"/envs/dial-v1/mcp?{query}", "initialize", {"protocolVersion": "2025-06-18"})
            assert refused.status_code == 200 and MCP_HEADER not in refused.headers, query
            error = refused.json()["error"]
            assert error["code"] == -32602 and says in error["message"], (query, error)
        bad_create = rpc(http, "/envs/dial-v1/mcp", "openenv/session/create", {"split": "test", "index": "3"}).json()
        assert bad_create["result"]["task"]["index"] == 3  # a digit string is an index, as on the URL
        rpc(http, "/mcp", "openenv/session/close", {"session_id": bad_create["result"]["session_id"]})
        for params, says in (({"split": "test", "index": NO_TASK}, "out of range"), ({"split": 1, "index": 0}, "split must be")):
            error = rpc(http, "/envs/dial-v1/mcp", "openenv/session/create", params).json()["error"]
            assert error["code"] == -32602 and says in error["message"]
        out_of_range = rpc(http, f"/envs/dial-v1/mcp?split=test&index={NO_TASK}", "initialize", {}).json()["error"]
        assert out_of_range["data"]["code"] == "VALIDATION_ERROR" and out_of_range["data"]["message"] == out_of_range["message"]
        assert manager.sessions == {}

    with serve([dial_text()]) as (url, manager):
        async def sdk() -> None:
            async with mcp_client(f"{url}/envs/dial-v1/mcp?split=test&index={NO_TASK}") as mcp:
                with pytest.raises(Exception, match=f"task index {NO_TASK} is out of range"):
                    await mcp.initialize()

        asyncio.run(sdk())
        assert manager.sessions == {}



def test_an_open_mcp_session_is_reset_to_a_task_and_an_unknown_one_leaves_it_playing(serve) -> None:
    """The SDK's session, reset through the routes that reach it by its id: the Task API's
    HTTP reset and the WebSocket openenv's MCP client attaches with ``?session_id=``."""
    with serve([dial_text()]) as (url, manager), httpx.Client(base_url=url, timeout=30) as http:
        as_written, _ = http_task(http, 3)
        size5_first, size5_answer = http_task(http, SIZE5)

        async def go() -> dict[str, Any]:
            seen: dict[str, Any] = {}
            async with mcp_client(f"{url}/envs/dial-v1/mcp?split=test&index=3") as mcp:
                init = await mcp.initialize()
                assert str(init.instructions).endswith(as_written)
                sid = only_session(manager).id
                # an unknown task, by HTTP and over the attached WebSocket: errors, nothing moves
                unknown = http.post("/reset", json={"split": "test", "index": NO_TASK}, headers={"X-Spade-Session": sid})
                seen["http_error"] = (unknown.status_code, unknown.json()["data"]["message"])
                with connect(url.replace("http://", "ws://") + f"/envs/dial-v1/ws?session_id={sid}") as socket:
                    seen["ws_error"] = ask(socket, "reset", {"split": "test", "index": NO_TASK})
                    seen["still"] = wire(await mcp.call_tool("act", {"action": "y"}))
                    # a task at another knob setting: the same session switches to it
                    seen["ws_reset"] = ask(socket, "reset", {"split": "test", "index": SIZE5})
                seen["switched"] = wire(await mcp.call_tool("act", {"action": "x"}))
                seen["ids"] = (sid, list(manager.sessions))
                back = http.post("/reset", json={"split": "test", "index": 3}, headers={"X-Spade-Session": sid})
                seen["back"] = (back.status_code, back.headers.get("X-Spade-Session"), back.json()["observation"]["text"])
                seen["tools"] = [t.name for t in (await mcp.list_tools()).tools]
            return seen

        seen = asyncio.run(go())
        assert seen["http_error"][0] == 400 and "out of range" in seen["http_error"][1]
        assert seen["ws_error"]["type"] == "error" and "out of range" in seen["ws_error"]["data"]["message"]
        assert seen["still"]["content"][0]["text"] == "y at size 3" and not seen["still"]["isError"]
        assert seen["ws_reset"]["type"] == "observation"
        assert seen["ws_reset"]["data"]["observation"]["text"] == size5_first
        assert seen["ws_reset"]["data"]["observation"]["metadata"]["knobs"] == {"SIZE": 5}
        assert seen["switched"]["content"][0]["text"] == size5_answer
        assert seen["switched"]["structuredContent"]["step_count"] == 1
        sid, open_ids = seen["ids"]
        assert open_ids == [sid]  # switched in place: no second session
        assert seen["back"] == (200, sid, as_written)
        assert seen["tools"] == ["act"]
        assert manager.sessions == {}


def test_openenvs_mcp_tool_client_resets_to_a_task_in_shared_workers(serve) -> None:
    """OpenEnv 0.10's own way: ``MCPToolClient.reset(split=, index=)`` over the WebSocket it
    attaches to its ``/mcp`` session; with workers shared (``sessions_per_worker=2``) another
    session of the same client keeps playing while this one switches setting and back."""
    from openenv.core.mcp_client import MCPToolClient

    with serve([dial_text()], sessions_per_worker=2) as (url, manager), httpx.Client(base_url=url, timeout=30) as http:
        first, answer = http_task(http, SIZE5)
        other = rpc(http, "/envs/dial-v1/mcp", "openenv/session/create", {"seed": 1}).json()["result"]["session_id"]

        def step_other(action: str) -> str:
            called = rpc(http, "/mcp", "tools/call", {"session_id": other, "name": "act", "arguments": {"action": action}})
            return str(called.json()["result"]["content"][0]["text"])

        async def go() -> dict[str, Any]:
            seen: dict[str, Any] = {}
            async with MCPToolClient(base_url=url + "/envs/dial-v1") as env:
                # (the observation's tool schemas go as ``tool_schemas``: a ``tools`` key would make
                # this client read it as a tools/list answer and drop the text)
                observation = (await env.reset(split="test", index=SIZE5)).observation
                seen["reset"], seen["reset_text"] = observation.metadata, observation.model_dump().get("text")
                with pytest.raises(RuntimeError, match="out of range") as refused:
                    await env.reset(split="test", index=NO_TASK)
                seen["refused"] = str(refused.value)
                seen["called"] = await env.call_tool("act", action="x")
                seen["other"] = step_other("z")
                seen["back"] = (await env.reset(split="test", index=3)).observation.metadata
                seen["called_back"] = await env.call_tool("act", action="x")
            return seen

        seen = asyncio.run(go())
        assert seen["reset"]["knobs"] == {"SIZE": 5} and seen["reset"]["seed"] == TEST_SEED_BASE + 3
        assert seen["reset_text"] == first, "the reset's text reaches OpenEnv's MCP client"
        assert seen["called"]["content"][0]["text"] == answer and seen["called"]["structuredContent"]["reward"] == 1.0
        assert seen["other"] == "z at size 3"
        assert seen["back"]["seed"] == TEST_SEED_BASE + 3 and "knobs" not in seen["back"]
        assert seen["called_back"]["content"][0]["text"] == "x at size 3"
        assert list(manager.sessions) == [other]
        assert rpc(http, "/mcp", "openenv/session/close", {"session_id": other}).json()["result"]["closed"] is True
        assert manager.sessions == {} and not any(manager._groups.values())  # every worker group given back
