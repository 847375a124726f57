r"""``spade serve`` as an MCP server (spade_serve.mcp_tools): the ``mcp`` SDK's own
streamable-HTTP client and ``ClientSession`` initialize a session, list its tools and call
them; openenv's MCP client (``openenv/session/*`` and ``/ws?session_id=``) plays the same
sessions. A tool call is one ``step``: it earns exactly what the same action earns through
``/step``. Every bad request is a JSON-RPC error or an ``isError`` result that leaves the
other sessions as they were."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import gymnasium as gym
import httpx
import pytest
from mcp.client.session import ClientSession

# ``streamable_http_client`` is the transport's name from mcp 1.2x on (``streamablehttp_client``
# is gone in mcp 2); the HTTP client it takes is httpx's in mcp 1, httpx2's in mcp 2, and
# ``create_mcp_http_client`` makes the right one in both.
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from spade_core.actions import ToolCall, format_tool_calls, parse_boxed, parse_tool_action
from spade_core.app.catalog import Catalog, open_store
from spade_core.config import load_config
from spade_core.metadata import ActionFormat
from spade_core.plugins import get_plugins
from spade_serve.catalog import ServedEnv, served_env
from spade_serve.mcp_tools import MCP_SESSION_HEADER
from websockets.sync.client import connect

from .conftest import Serve
from .envs import served
from .test_faults import ask

GAME = "polynomial_probe-v1"
TOOLS = "tooluse.math_toolkit-v1"
TOKEN = "a-token-for-the-mcp-tests"


def counter() -> ServedEnv:
    """The counter of tests/serve/envs.py as a free-text environment: ``act`` steps the
    action as it is ("win" wins)."""
    env = served()
    return ServedEnv(env.kind, env.metadata.model_copy(update={"action_format": ActionFormat.free_text}), env.source, ())


@pytest.fixture(scope="module")
def seeds() -> dict[str, ServedEnv]:
    """The game and the tool-use seed, as ``spade serve`` serves them."""
    plugins = get_plugins()
    with open_store(load_config(), read_only=True) as store:
        catalog = Catalog(plugins, store)
        return {ref: served_env(catalog.resolve(ref), catalog) for ref in (GAME, TOOLS)}


@pytest.fixture
def both(serve: Serve, seeds: dict[str, ServedEnv]) -> Iterator[tuple[str, Any]]:
    """A server of the game and the tool-use seed (sandboxed, as by default)."""
    with serve(envs=list(seeds.values())) as running:
        yield running


@asynccontextmanager
async def mcp_client(url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    """The ``mcp`` SDK's client on ``url`` (``initialize`` is the caller's to send)."""
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
        streams = await stack.enter_async_context(streamable_http_client(url, http_client=http))
        yield await stack.enter_async_context(ClientSession(streams[0], streams[1]))


def wire(model: Any) -> dict[str, Any]:
    """An SDK result as its JSON (field names as on the wire, in mcp 1 and 2 alike)."""
    return dict(model.model_dump(by_alias=True, mode="json", exclude_none=True))


def messages(exc: BaseException) -> str:
    """The messages of ``exc`` and of every exception it groups."""
    inner = getattr(exc, "exceptions", ())
    return " | ".join([str(exc), *(messages(e) for e in inner)])


def rpc(http: httpx.Client, path: str, method: str, params: dict | None = None, *, sid: str | None = None,
        rid: int | None = 1) -> httpx.Response:
    """One raw JSON-RPC message (a notification when ``rid`` is None)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}
    if rid is not None:
        message["id"] = rid
    return http.post(path, json=message, headers={MCP_SESSION_HEADER: sid} if sid else {})


def solution(env_id: str, seed: int) -> list[str]:
    env = gym.make(f"spade/{env_id}")
    env.reset(seed=seed)
    try:
        return list(env.unwrapped.solution())
    finally:
        env.close()


def stepped(http: httpx.Client, env_id: str, seed: int, actions: list[str]) -> tuple[str, list[dict[str, Any]]]:
    """Reset ``env_id`` with ``seed`` and step ``actions`` through the HTTP routes: the first
    observation and each step's answer."""
    reset = http.post(f"/envs/{env_id}/reset", json={"seed": seed})
    sid = reset.headers["X-Spade-Session"]
    answers = [http.post("/step", json={"action": {"message": a}}, headers={"X-Spade-Session": sid}).json() for a in actions]
    http.delete(f"/sessions/{sid}")
    return reset.json()["observation"]["text"], answers


# --- initialize and tools/list ------------------------------------------------------------
def test_initialize_opens_a_reset_session_and_a_game_lists_the_act_tool(both, seeds) -> None:
    url, manager = both
    first, _ = stepped(httpx.Client(base_url=url), GAME, 5, [])

    async def go() -> None:
        async with mcp_client(f"{url}/envs/{GAME}/mcp?seed=5") as mcp:
            init = wire(await mcp.initialize())
            assert init["protocolVersion"] == "2025-11-25"  # what the SDK asked for
            assert "tools" in init["capabilities"] and init["serverInfo"]["name"] == "spade-serve"
            assert init["instructions"].endswith(first)
            [session] = manager.sessions.values()
            assert session.transport == "mcp" and session.env.id == GAME and session.seed == 5 and session.started
            tools = wire(await mcp.list_tools())["tools"]
            assert [t["name"] for t in tools] == ["act"]
            schema = tools[0]["inputSchema"]
            assert schema["properties"]["action"]["type"] == "string" and schema["required"] == ["action"]
            assert set(schema["properties"]) == {"action"}
            await mcp.send_ping()

    asyncio.run(go())
    assert manager.sessions == {}  # the client's DELETE closed it


def test_a_tool_use_session_lists_the_environments_own_schemas_plus_answer(both, seeds) -> None:
    url, _ = both
    env = gym.make(f"spade/{TOOLS}")
    env.reset(seed=1)
    declared = {s["function"]["name"]: s["function"] for s in env.unwrapped.tools}
    env.close()

    async def go() -> list[dict[str, Any]]:
        async with mcp_client(f"{url}/envs/{TOOLS}/mcp") as mcp:
            await mcp.initialize()
            return list(wire(await mcp.list_tools())["tools"])

    tools = {t["name"]: t for t in asyncio.run(go())}
    assert set(tools) == set(declared) | {"answer"}
    for name, spec in declared.items():
        assert tools[name]["inputSchema"] == spec["parameters"], name
        assert tools[name]["description"] == spec["description"], name
    assert tools["answer"]["inputSchema"]["required"] == ["text"]


def test_the_protocol_version_is_the_clients_when_served_else_the_newest(both) -> None:
    url, manager = both
    with httpx.Client(base_url=url) as http:
        for asked, answered in (("2025-03-26", "2025-03-26"), ("2024-11-05", "2024-11-05"), ("1999-01-01", "2025-11-25")):
            reply = rpc(http, f"/envs/{GAME}/mcp", "initialize", {"protocolVersion": asked, "capabilities": {},
                                                                  "clientInfo": {"name": "t", "version": "0"}})
            assert reply.status_code == 200 and reply.json()["result"]["protocolVersion"] == answered
            sid = reply.headers[MCP_SESSION_HEADER]
            assert rpc(http, "/mcp", "notifications/initialized", sid=sid, rid=None).status_code == 202
            assert http.delete("/mcp", headers={MCP_SESSION_HEADER: sid}).status_code == 204
    assert manager.sessions == {}


# --- tools/call is step --------------------------------------------------------------------
def test_act_calls_earn_what_the_same_boxed_actions_earn_through_step(both) -> None:
    url, _ = both
    seed = 4
    actions = ["query 0", "query 1", *[parse_boxed(a) or "" for a in solution(GAME, seed)]]
    with httpx.Client(base_url=url) as http:
        _, through_step = stepped(http, GAME, seed, [f"\\boxed{{{a}}}" for a in actions])

    async def go() -> list[Any]:
        async with mcp_client(f"{url}/envs/{GAME}/mcp?seed={seed}") as mcp:
            await mcp.initialize()
            return [wire(await mcp.call_tool("act", {"action": a})) for a in actions]

    results = asyncio.run(go())
    assert [r["structuredContent"]["reward"] for r in results] == [s["reward"] for s in through_step]
    assert [r["content"][0]["text"] for r in results] == [s["observation"]["text"] for s in through_step]
    assert [r["structuredContent"]["terminated"] for r in results] == [s["observation"]["terminated"] for s in through_step]
    assert results[-1]["structuredContent"]["terminated"] is True and results[-1]["structuredContent"]["reward"] == 1.0
    assert not any(r["isError"] for r in results)


def test_tool_calls_earn_what_the_same_tool_call_actions_earn_through_step(both) -> None:
    url, _ = both
    seed = 3

    def action(name: str, arguments: dict[str, Any]) -> str:
        return format_tool_calls([], answer=arguments["text"]) if name == "answer" else ToolCall(name, arguments).to_tag()

    # Played through /step first, one call a step: a bad call (a step, an error), then each
    # turn's reference calls and, unless the turn passed already (this environment ends a
    # turn as soon as it passes), its reference answer.
    calls: list[tuple[str, dict[str, Any]]] = [("add", {"a": 1, "b": "two"})]
    with httpx.Client(base_url=url) as http:
        sid = http.post(f"/envs/{TOOLS}/reset", json={"seed": seed}).headers["X-Spade-Session"]

        def step(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            calls.append((name, arguments))
            return http.post("/step", json={"action": {"message": action(name, arguments)}}, headers={"X-Spade-Session": sid}).json()

        through_step = [http.post("/step", json={"action": {"message": action(*calls[0])}}, headers={"X-Spade-Session": sid}).json()]
        for turn in solution(TOOLS, seed):
            parsed = parse_tool_action(turn)
            for c in parsed.calls:
                through_step.append(step(c.name, c.arguments))
                if through_step[-1]["observation"]["info"]["advanced"]:
                    break
            else:
                through_step.append(step("answer", {"text": parsed.answer or ""}))
        http.delete(f"/sessions/{sid}")

    async def go() -> list[Any]:
        async with mcp_client(f"{url}/envs/{TOOLS}/mcp?seed={seed}") as mcp:
            await mcp.initialize()
            return [wire(await mcp.call_tool(name, arguments)) for name, arguments in calls]

    results = asyncio.run(go())
    assert [r["structuredContent"]["reward"] for r in results] == [s["reward"] for s in through_step]
    assert [r["content"][0]["text"] for r in results] == [s["observation"]["text"] for s in through_step]
    assert results[0]["isError"] and "must be number" in results[0]["content"][0]["text"]
    assert not any(r["isError"] for r in results[1:])
    assert results[-1]["structuredContent"]["terminated"] is True and results[-1]["structuredContent"]["reward"] == 1.0


# --- bad requests ------------------------------------------------------------------------
def test_bad_calls_are_errors_and_leave_other_sessions_alone(both) -> None:
    url, manager = both
    with httpx.Client(base_url=url) as http:
        opened = rpc(http, f"/envs/{GAME}/mcp?seed=2", "initialize", {"protocolVersion": "2025-06-18"})
        other = opened.headers[MCP_SESSION_HEADER]
        assert rpc(http, "/mcp", "tools/call", {"name": "act", "arguments": {"action": "query 3"}}, sid=other).json()["result"]["structuredContent"]["step_count"] == 1

        mine = rpc(http, f"/envs/{GAME}/mcp", "initialize", {}).headers[MCP_SESSION_HEADER]
        unknown = rpc(http, "/mcp", "tools/list", sid="no-such-session")
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == -32001
        assert "initialize" in unknown.json()["error"]["message"]
        no_session = rpc(http, f"/envs/{GAME}/mcp", "tools/call", {"name": "act", "arguments": {"action": "x"}})
        assert no_session.status_code == 400 and "initialize" in no_session.json()["error"]["message"]
        bad_tool = rpc(http, "/mcp", "tools/call", {"name": "jump", "arguments": {}}, sid=mine).json()
        assert bad_tool["error"]["code"] == -32602 and "Unknown tool: jump" in bad_tool["error"]["message"]
        not_object = rpc(http, "/mcp", "tools/call", {"name": "act", "arguments": ["x"]}, sid=mine).json()
        assert not_object["error"]["code"] == -32602
        for arguments in ({"action": 3}, {}, {"action": "x", "extra": 1}):
            refused = rpc(http, "/mcp", "tools/call", {"name": "act", "arguments": arguments}, sid=mine).json()["result"]
            assert refused["isError"] is True and "act takes one string argument" in refused["content"][0]["text"]
        wrong_env = rpc(http, f"/envs/{TOOLS}/mcp", "tools/list", sid=mine).json()
        assert wrong_env["error"]["code"] == -32602 and GAME in wrong_env["error"]["message"]
        assert manager.sessions[mine].step_count == 0  # nothing above was stepped

        for action in solution(GAME, manager.sessions[mine].seed or 0):
            last = rpc(http, "/mcp", "tools/call", {"name": "act", "arguments": {"action": action}}, sid=mine).json()
        assert last["result"]["structuredContent"]["terminated"] is True
        over = rpc(http, "/mcp", "tools/call", {"name": "act", "arguments": {"action": "query 1"}}, sid=mine).json()["result"]
        assert over["isError"] is True and over["structuredContent"]["error"]["code"] == "EPISODE_STATE"
        assert "episode is over" in over["content"][0]["text"]

        assert http.delete("/mcp", headers={MCP_SESSION_HEADER: mine}).status_code == 204
        assert rpc(http, "/mcp", "tools/list", sid=mine).status_code == 404
        assert http.delete("/mcp", headers={MCP_SESSION_HEADER: mine}).status_code == 404
        # the first session went through all of it untouched
        again = rpc(http, "/mcp", "tools/call", {"name": "act", "arguments": {"action": "query 4"}}, sid=other).json()
        assert again["result"]["structuredContent"]["step_count"] == 2 and not again["result"]["isError"]
        assert list(manager.sessions) == [other]


def test_the_sdk_client_surfaces_protocol_errors(both) -> None:
    url, _ = both

    async def go() -> None:
        async with mcp_client(f"{url}/envs/{GAME}/mcp") as mcp:
            await mcp.initialize()
            with pytest.raises(Exception, match="Unknown tool: jump"):
                await mcp.call_tool("jump", {})
            bad = wire(await mcp.call_tool("act", {"command": "x"}))
            assert bad["isError"] and "act takes one string argument" in bad["content"][0]["text"]
        async with mcp_client(f"{url}/mcp") as mcp:  # two environments served: the root names none
            with pytest.raises(Exception, match="serves several environments"):
                await mcp.initialize()

    asyncio.run(go())


def test_json_rpc_framing_errors_answer_as_before(both) -> None:
    url, manager = both
    with httpx.Client(base_url=url) as http:
        assert http.post("/mcp", content=b"{not json", headers={"Content-Type": "application/json"}).json()["error"]["code"] == -32700
        for body in ({}, [], {"jsonrpc": "1.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 7, "method": 3}):
            reply = http.post("/mcp", json=body)
            assert reply.status_code == 200 and reply.json()["error"]["code"] == -32600
        unknown = rpc(http, "/mcp", "resources/list", rid=9)
        assert unknown.status_code == 200 and unknown.json() == {
            "jsonrpc": "2.0", "id": 9, "error": {"code": -32601, "message": "Method not found: resources/list"}}
        assert rpc(http, "/mcp", "notifications/whatever", rid=None).status_code == 202
        assert rpc(http, "/mcp", "ping").json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
        assert http.get("/mcp").status_code == 405
        assert rpc(http, f"/envs/{GAME}/mcp?seed=-1", "initialize", {}).json()["error"]["code"] == -32602
    assert manager.sessions == {}


def test_a_token_guarded_server_answers_mcp_without_it_with_a_json_rpc_error(serve) -> None:
    with serve(envs=[counter()], token=TOKEN) as (url, manager):
        with httpx.Client(base_url=url) as http:
            denied = rpc(http, "/mcp", "initialize", {})
            assert denied.status_code == 401 and denied.headers["WWW-Authenticate"] == "Bearer"
            assert denied.json()["error"]["data"]["code"] == "UNAUTHORIZED"

        async def without_token() -> None:
            async with mcp_client(f"{url}/mcp") as mcp:
                await mcp.initialize()

        async def with_token() -> str:
            async with mcp_client(f"{url}/mcp?seed=1", token=TOKEN) as mcp:
                await mcp.initialize()
                result = wire(await mcp.call_tool("act", {"action": "win"}))
                return str(result["content"][0]["text"])

        # mcp 2 raises the JSON-RPC error; mcp 1 the HTTP status, from its transport's task group
        with pytest.raises(Exception) as refused:
            asyncio.run(without_token())
        assert "Unauthorized" in messages(refused.value)
        assert asyncio.run(with_token()).startswith("turn 1: win")  # the counter of tests/serve/envs.py
        assert manager.sessions == {}


# --- openenv's MCP clients -------------------------------------------------------------------
def test_openenv_sessions_are_opened_and_closed_by_method_and_played_over_the_websocket(serve) -> None:
    with serve(envs=[counter()]) as (url, manager), httpx.Client(base_url=url) as http:
        created = rpc(http, "/envs/counter-v1/mcp", "openenv/session/create", {"seed": 8}).json()["result"]
        sid = created["session_id"]
        assert created["observation"].startswith("secret ") and manager.sessions[sid].seed == 8
        listed = rpc(http, "/mcp", "tools/list", {"session_id": sid}).json()["result"]["tools"]
        assert [t["name"] for t in listed] == ["act"]
        ws = url.replace("http://", "ws://") + f"/envs/counter-v1/ws?session_id={sid}"
        with connect(ws) as socket:  # what openenv's MCP client does to reset and step
            assert ask(socket, "reset", {"seed": 9})["type"] == "observation"
            assert ask(socket, "step", {"message": "a"})["data"]["observation"]["metadata"]["session_id"] == sid
        assert sid in manager.sessions  # the connection did not own it
        called = rpc(http, "/mcp", "tools/call", {"session_id": sid, "name": "act", "arguments": {"action": "win"}}).json()
        assert called["result"]["structuredContent"] == {**called["result"]["structuredContent"], "reward": 1.0, "step_count": 2}
        assert manager.sessions[sid].seed == 9
        unknown = rpc(http, "/mcp", "tools/list", {"session_id": "nope"}).json()
        assert unknown["error"]["code"] == -32602 and "Unknown session_id" in unknown["error"]["message"]
        closed = rpc(http, "/mcp", "openenv/session/close", {"session_id": sid}).json()
        assert closed["result"] == {"session_id": sid, "closed": True}
        assert rpc(http, "/mcp", "openenv/session/close", {"session_id": sid}).json()["error"]["code"] == -32602
        assert manager.sessions == {}


def test_openenvs_mcp_tool_client_in_production_mode(serve) -> None:
    from openenv.core.mcp_client import MCPToolClient

    async def go(url: str) -> tuple[list[str], Any]:
        client = MCPToolClient(base_url=url)
        client.use_production_mode = True  # HTTP /mcp only, no WebSocket (openenv-core 0.3's only mode)
        try:
            names = [t.name for t in await client.list_tools()]
            return names, await client.call_tool("act", action="win")
        finally:
            await client.close()

    with serve(envs=[counter()]) as (url, manager):
        names, result = asyncio.run(go(url + "/envs/counter-v1"))
        assert names == ["act"]
        assert result["structuredContent"]["reward"] == 1.0 and result["content"][0]["text"].startswith("turn 1: win")
        assert manager.sessions == {}


def test_openenv_0_10s_mcp_tool_client_resets_over_the_websocket_and_calls_tools(serve) -> None:
    from openenv.core.mcp_client import MCPToolClient

    async def go(url: str) -> tuple[list[str], Any]:
        async with MCPToolClient(base_url=url) as env:
            await env.reset(seed=3)
            names = [t.name for t in await env.list_tools()]
            return names, await env.call_tool("act", action="win")

    with serve(envs=[counter()]) as (url, manager):
        names, result = asyncio.run(go(url + "/envs/counter-v1"))
        assert names == ["act"]
        assert result["structuredContent"]["reward"] == 1.0 and result["structuredContent"]["step_count"] == 1
        assert json.dumps(result).count("turn 1: win") == 1
        assert manager.sessions == {}
