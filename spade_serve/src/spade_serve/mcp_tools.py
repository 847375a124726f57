r"""MCP tool access to served sessions: JSON-RPC 2.0 at ``/mcp``, as MCP's "streamable HTTP"
transport carries it, and as openenv's MCP clients call it.

An MCP session is one :class:`~spade_serve.sessions.Session` of the server's
:class:`~spade_serve.sessions.SessionManager` (the limits, sandbox, idle reaping and ids
of every other transport). Two ways open one:

* MCP's handshake: ``initialize`` opens a session on the route's environment
  (``/envs/<env_id>/mcp``, or ``/mcp`` of a server of one environment, or ``/mcp?env_id=``),
  resets it (``?seed=N`` on the URL seeds the episode; ``?split=test&index=N`` plays that
  task of the Task API, :mod:`spade_serve.tasks`: its knob setting and seed) and answers
  its id in the ``Mcp-Session-Id`` header; later requests send that header, ``DELETE``
  with it closes the session. The result's ``instructions`` hold the environment's first
  observation.
* openenv's: ``openenv/session/create`` (``params.seed``, ``params.split`` and
  ``params.index`` optional, as on the URL) answers ``{"session_id", "observation"}``
  (and ``"task"``, the task's spec, when one was named); later requests name it in
  ``params.session_id``, and ``openenv/session/close`` closes it. openenv's client resets
  and steps that same session over ``/ws?session_id=<id>``.

The id is the server's session id, so ``/reset`` and ``/state`` with ``X-Spade-Session``
reach the same episode. A new episode, or another task, in the same session is a reset of
it, the way OpenEnv 0.10 picks a task (``reset(split=, index=)``; its MCP client resets
over ``/ws?session_id=<id>``), or ``/reset`` with the id; a task at another knob setting
switches the session to it, keeping the id. There is no ``reset`` tool: OpenEnv reserves
``reset``, ``step``, ``state`` and ``close`` as orchestration controls, never tools
(``RESERVED_TOOL_NAMES`` of ``openenv.core.env_server.mcp_types`` and of its harness), and
the tools are the agent's, who could otherwise end its episode early or pick an easier task.

Tools (``tools/list``): a tool-use environment's own tools, each with its own JSON schema
as ``inputSchema``, plus ``answer(text)`` (the reply that ends a request, stepped as
``<answer>text</answer>``; left out when the environment has a tool of that name); any
other environment has one tool, ``act(action)``: for a boxed environment the action is
stepped as ``\boxed{action}`` (as it is when it already holds a ``\boxed{...}``), for a
free-text one as it is. ``tools/call`` is one ``step`` of the episode with that action
(an environment tool's call is stepped as its ``<tool_call>`` tag): the result's text is
the observation, ``structuredContent`` holds ``reward``, ``terminated``, ``truncated``,
``done``, ``step_count`` and the environment's ``info``. ``isError`` is true when the
environment reported the call as failed (``info["tool_errors"]``: a bad argument, a
tool's own error), when the step failed or the episode is over; arguments are checked
against a schema by the environment itself, so a call costs the step it would cost
through ``/step`` and earns the same reward.

Protocol errors are JSON-RPC errors, framed by :mod:`spade_serve.mcp_rpc` (which lists
their codes).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import metadata as _dist
from typing import Any

from spade_core.actions import ToolCall, find_boxed, format_boxed, format_tool_calls
from spade_core.metadata import ActionFormat

from . import json_input
from .catalog import ServedEnv
from .errors import EnvFailed, EpisodeStateError, InvalidRequest, ServeError
from .mcp_rpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    SERVER_ERROR,
    SESSION_UNKNOWN,
    McpAnswer,
    McpRequestContext,
    RpcFailure,
    negotiate,
    rpc_error,
    rpc_result,
    serve_error,
    whole_number,
)
from .models import SpadeObservation
from .session import MAX_SEED, Session
from .sessions import SessionManager
from .tasks import Task, TaskCatalog

#: The header carrying the session id (MCP's streamable HTTP transport).
MCP_SESSION_HEADER = "Mcp-Session-Id"

ACT_INSTRUCTIONS = (
    "Act by calling the tool `act` with one action: what you would write inside \\boxed{...}. "
    "Each call is one step of the episode; its result is the environment's observation, with the "
    "step's reward, terminated and truncated in structuredContent."
)
TEXT_INSTRUCTIONS = (
    "Act by calling the tool `act` with one action. Each call is one step of the episode; its result is the "
    "environment's observation, with the step's reward, terminated and truncated in structuredContent."
)
ANSWER_INSTRUCTIONS = (
    "Fulfil the requests by calling the tools; each call is one step of the episode. When a request is done, "
    "call `answer` with your reply to the user. Each result holds the step's reward, terminated and truncated "
    "in structuredContent."
)


def _server_version() -> str:
    try:
        return _dist.version("spade-serve")
    except _dist.PackageNotFoundError:
        return "0"


# --- tools ------------------------------------------------------------------------------
@dataclass(frozen=True)
class SessionTool:
    """One tool of a session: what ``tools/list`` shows and how a call becomes a step's
    action (``encode`` answers the action, or raises :class:`ToolArgumentError`)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    encode: Callable[[dict[str, Any]], str] = field(compare=False)

    def listing(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "inputSchema": copy.deepcopy(self.input_schema)}


class ToolArgumentError(Exception):
    """The arguments of a call to one of the server's own tools (``act``, ``answer``) are
    wrong; nothing was stepped."""


def _one_string(tool: str, key: str, wrap: Callable[[str], str]) -> Callable[[dict[str, Any]], str]:
    def encode(arguments: dict[str, Any]) -> str:
        extra = sorted(set(arguments) - {key})
        value = arguments.get(key)
        if extra or not isinstance(value, str):
            got = f"unknown argument(s) {', '.join(extra)}" if extra else f"{key!r} is {json.dumps(value)}"
            raise ToolArgumentError(f'{tool} takes one string argument, {{"{key}": "..."}}; got {got}')
        return wrap(value)

    return encode


def _string_schema(key: str, description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {key: {"type": "string", "description": description}},
        "required": [key],
        "additionalProperties": False,
    }


def _boxed(action: str) -> str:
    return action if find_boxed(action) else format_boxed(action)


def session_tools(env: ServedEnv, schemas: list[dict[str, Any]] | None) -> dict[str, SessionTool]:
    """The tools of a session on ``env`` by name; ``schemas``: the OpenAI-format schemas its
    instance reported at its first reset (tool-use environments)."""
    fmt = env.metadata.action_format
    if fmt != ActionFormat.tool_call:
        boxed = fmt == ActionFormat.boxed
        description = (
            "Take one action in the environment: what you would write inside \\boxed{...} (an action that already "
            "holds a \\boxed{...} is sent as it is). One call is one step; the result is the environment's observation."
            if boxed
            else "Take one action in the environment. One call is one step; the result is the environment's observation."
        )
        act = SessionTool(
            "act",
            description,
            _string_schema("action", "The action" + (", as you would write it inside \\boxed{...}" if boxed else "")),
            _one_string("act", "action", _boxed if boxed else str),
        )
        return {"act": act}
    tools: dict[str, SessionTool] = {}
    for schema in schemas or []:
        fn = schema.get("function", schema) if isinstance(schema, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or fn["name"] in tools:
            continue
        params = fn.get("parameters")
        params = dict(params) if isinstance(params, Mapping) else {"type": "object", "properties": {}}
        tools[fn["name"]] = SessionTool(fn["name"], str(fn.get("description") or ""), params, _tool_call(fn["name"]))
    if "answer" not in tools:
        tools["answer"] = SessionTool(
            "answer",
            "Give your reply to the user's current request (ends that request). One call is one step; the result is "
            "what the user says next, or that the conversation is over.",
            _string_schema("text", "Your reply to the user"),
            _one_string("answer", "text", lambda text: format_tool_calls([], answer=text)),
        )
    return tools


def _tool_call(name: str) -> Callable[[dict[str, Any]], str]:
    def encode(arguments: dict[str, Any]) -> str:
        return ToolCall(name, dict(arguments)).to_tag()

    return encode


def instructions(env: ServedEnv, first_observation: str) -> str:
    """What ``initialize`` tells the client: how to act, then the first observation."""
    fmt = env.metadata.action_format
    how = {ActionFormat.tool_call: ANSWER_INSTRUCTIONS, ActionFormat.boxed: ACT_INSTRUCTIONS}.get(fmt, TEXT_INSTRUCTIONS)
    return f"{how}\n\n{first_observation}"


def step_result(obs: SpadeObservation, session: Session) -> dict[str, Any]:
    """A ``tools/call`` result of one step: the observation as text, the step in
    ``structuredContent``; an error when the environment reported the call as failed."""
    errors = obs.info.get("tool_errors") if isinstance(obs.info, dict) else None
    failed = isinstance(errors, int) and not isinstance(errors, bool) and errors > 0
    return {
        "content": [{"type": "text", "text": obs.text}],
        "structuredContent": {
            "reward": obs.reward,
            "terminated": obs.terminated,
            "truncated": obs.truncated,
            "done": obs.done,
            "step_count": session.step_count,
            "episode_id": session.episode_id,
            "info": obs.info,
        },
        "isError": failed,
    }


def tool_error(message: str, **structured: Any) -> dict[str, Any]:
    """A ``tools/call`` result that failed before or in its step (the client's model reads
    ``message``)."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": message}], "isError": True}
    if structured:
        result["structuredContent"] = structured
    return result


class McpEndpoint:
    """The JSON-RPC side of ``/mcp``; ``resolve_env(env_ref)`` is the app's own choice of
    environment for a route (the default one, or the one named); ``tasks``, the app's Task
    API catalog (the tasks a session may be opened at)."""

    def __init__(
        self, manager: SessionManager, resolve_env: Callable[[str | None], ServedEnv], tasks: TaskCatalog | None = None
    ) -> None:
        self.manager = manager
        self.resolve_env = resolve_env
        self.tasks = tasks if tasks is not None else TaskCatalog(kept=manager.catalog.kept)

    async def post(self, raw: bytes, ctx: McpRequestContext) -> McpAnswer:
        """Answer one POSTed JSON-RPC message."""
        try:
            message = json_input.loads(raw or b"null")
        except json_input.MalformedJson as exc:
            return rpc_error(None, PARSE_ERROR, f"Parse error: {exc}")
        rid = message.get("id") if isinstance(message, dict) else None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return rpc_error(rid, INVALID_REQUEST, "Invalid Request")
        if "method" not in message and "id" in message and ("result" in message or "error" in message):
            return McpAnswer(202)  # a response to a request of ours: this server sends none
        method = message.get("method")
        if not isinstance(method, str):
            return rpc_error(rid, INVALID_REQUEST, "Invalid Request")
        if "id" not in message:  # a notification (notifications/initialized...): no reply
            if ctx.session_header and ctx.session_header not in self.manager.sessions:
                return self._unknown_header(None, ctx.session_header)
            return McpAnswer(202)
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return rpc_error(rid, INVALID_PARAMS, "Invalid params: params must be an object")
        handler = self._methods.get(method)
        if handler is None:
            return rpc_error(rid, METHOD_NOT_FOUND, f"Method not found: {method}")
        try:
            answer: McpAnswer = await handler(self, rid, params, ctx)
            return answer
        except RpcFailure as failure:
            return failure.answer

    async def delete(self, ctx: McpRequestContext) -> McpAnswer:
        """``DELETE`` with ``Mcp-Session-Id``: close that session."""
        if not ctx.session_header:
            return rpc_error(None, SERVER_ERROR, f"Bad Request: no {MCP_SESSION_HEADER} header", status=400)
        session = self.manager.sessions.get(ctx.session_header)
        if session is None:
            return self._unknown_header(None, ctx.session_header)
        await self.manager.close(session)
        return McpAnswer(204)

    # --- sessions -----------------------------------------------------------------------
    def _unknown_header(self, rid: Any, sid: str) -> McpAnswer:
        return rpc_error(
            rid,
            SESSION_UNKNOWN,
            f"Session not found: no open session {sid!r} (closed, expired after "
            f"{self.manager.settings.idle_timeout_s:g} s idle, or never opened): initialize a new one",
            status=404,
        )

    def _session(self, rid: Any, params: dict[str, Any], ctx: McpRequestContext) -> Session:
        """The session a request is about: the header's, else ``params.session_id``'s."""
        named = params.get("session_id")
        if ctx.session_header:
            session = self.manager.sessions.get(ctx.session_header)
            if session is None:
                raise RpcFailure(self._unknown_header(rid, ctx.session_header))
        elif named is not None:
            if not isinstance(named, str) or named not in self.manager.sessions:
                raise RpcFailure(rpc_error(rid, INVALID_PARAMS, f"Unknown session_id: {named}"))
            session = self.manager.sessions[named]
        else:
            raise RpcFailure(rpc_error(
                rid, SERVER_ERROR,
                f"Bad Request: no session: send initialize first, then its {MCP_SESSION_HEADER} header",
                status=400,
            ))
        if ctx.env_ref is not None:
            env = self._env(rid, ctx.env_ref)
            if env.id != session.env.id:
                raise RpcFailure(rpc_error(
                    rid, INVALID_PARAMS, f"session {session.id} is a session of {session.env.id}, not of {env.id}"
                ))
        return session

    def _env(self, rid: Any, env_ref: str | None) -> ServedEnv:
        try:
            return self.resolve_env(env_ref)
        except ServeError as exc:
            raise RpcFailure(serve_error(rid, exc)) from None

    async def _open(
        self, rid: Any, seed: Any, ctx: McpRequestContext, split: Any = None, index: Any = None
    ) -> tuple[Session, SpadeObservation, Task | None]:
        """A new session on the route's environment, reset with ``seed``; at the Task API's
        task ``split``/``index`` when either is given (its knob setting and seed; a ``seed``
        beside them must be the task's)."""
        seed = whole_number(rid, "seed", seed, f"an integer from 0 to {MAX_SEED}")
        index = whole_number(rid, "index", index, "a task index (an integer >= 0)")
        if split is not None and not isinstance(split, str):
            raise RpcFailure(rpc_error(rid, INVALID_PARAMS, f"split must be a split's name, got {json.dumps(split)}"))
        try:
            self.manager.check_room(ctx.client)  # refused before anything is resolved or made
        except ServeError as exc:
            raise RpcFailure(serve_error(rid, exc)) from None
        env = self._env(rid, ctx.env_ref)
        task: Task | None = None
        try:
            if split is not None or index is not None:
                chosen, env = await self.manager.gate.run(self.tasks.resolve, env, split, index, seed)
                task, seed = chosen, chosen.seed
            session = await self.manager.open(env, ctx.client, "mcp")
        except ServeError as exc:
            raise RpcFailure(serve_error(rid, exc)) from None
        try:
            obs = await self.manager.reset(session, seed)
        except ServeError as exc:
            await self.manager.close(session)
            raise RpcFailure(serve_error(rid, exc)) from None
        return session, obs, task

    # --- methods ------------------------------------------------------------------------
    async def _initialize(self, rid: Any, params: dict[str, Any], ctx: McpRequestContext) -> McpAnswer:
        session, obs, _ = await self._open(rid, ctx.seed, ctx, ctx.split, ctx.index)
        result = {
            "protocolVersion": negotiate(params.get("protocolVersion")),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "spade-serve", "title": f"spade serve: {session.env.id}", "version": _server_version()},
            "instructions": instructions(session.env, obs.text),
        }
        return rpc_result(rid, result, {MCP_SESSION_HEADER: session.id})

    async def _create(self, rid: Any, params: dict[str, Any], ctx: McpRequestContext) -> McpAnswer:
        seed = params.get("seed", ctx.seed)
        session, obs, task = await self._open(rid, seed, ctx, params.get("split", ctx.split), params.get("index", ctx.index))
        result: dict[str, Any] = {"session_id": session.id, "observation": obs.text}
        if task is not None:
            result["task"] = task.spec()
        return rpc_result(rid, result, {MCP_SESSION_HEADER: session.id})

    async def _close(self, rid: Any, params: dict[str, Any], ctx: McpRequestContext) -> McpAnswer:
        sid = params.get("session_id")
        if not isinstance(sid, str) or not sid:
            return rpc_error(rid, INVALID_PARAMS, "Invalid params - 'session_id' is required")
        session = self.manager.sessions.get(sid)
        if session is None:
            return rpc_error(rid, INVALID_PARAMS, f"Unknown session_id: {sid}")
        await self.manager.close(session)
        return rpc_result(rid, {"session_id": sid, "closed": True})

    async def _ping(self, rid: Any, params: dict[str, Any], ctx: McpRequestContext) -> McpAnswer:
        if ctx.session_header and ctx.session_header not in self.manager.sessions:
            return self._unknown_header(rid, ctx.session_header)
        return rpc_result(rid, {})

    async def _list(self, rid: Any, params: dict[str, Any], ctx: McpRequestContext) -> McpAnswer:
        session = self._session(rid, params, ctx)
        tools = session_tools(session.env, session.tools)
        return rpc_result(rid, {"tools": [t.listing() for t in tools.values()]})

    async def _call(self, rid: Any, params: dict[str, Any], ctx: McpRequestContext) -> McpAnswer:
        session = self._session(rid, params, ctx)
        name = params.get("name")
        if not isinstance(name, str) or not name:
            return rpc_error(rid, INVALID_PARAMS, "Invalid params: tools/call needs a tool 'name'")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return rpc_error(rid, INVALID_PARAMS, f"Invalid params: the arguments of {name} must be an object")
        tools = session_tools(session.env, session.tools)
        tool = tools.get(name)
        if tool is None:
            return rpc_error(rid, INVALID_PARAMS, f"Unknown tool: {name} (this session's tools: {', '.join(tools)})")
        try:
            action = tool.encode(arguments)
        except ToolArgumentError as exc:
            return rpc_result(rid, tool_error(str(exc)))
        try:
            obs = await self.manager.step(session, action)
        except (EpisodeStateError, EnvFailed, InvalidRequest) as exc:
            # the model's to read: the episode is over, the environment failed on this step
            state = session.state()
            return rpc_result(rid, tool_error(
                exc.message, error=exc.payload(), terminated=state.terminated, truncated=state.truncated,
                done=state.terminated or state.truncated or session.closed, step_count=state.step_count,
            ))
        except ServeError as exc:
            return serve_error(rid, exc)
        return rpc_result(rid, step_result(obs, session))

    _methods: dict[str, Callable[..., Any]] = {
        "initialize": _initialize,
        "ping": _ping,
        "tools/list": _list,
        "tools/call": _call,
        "openenv/session/create": _create,
        "openenv/session/close": _close,
    }


__all__ = ["MCP_SESSION_HEADER", "McpEndpoint", "SessionTool", "ToolArgumentError", "instructions", "session_tools",
           "step_result", "tool_error"]
