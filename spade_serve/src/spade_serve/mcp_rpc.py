"""MCP's JSON-RPC 2.0 framing, as ``/mcp`` speaks it (:mod:`spade_serve.mcp_tools` holds
the methods): the answers and error codes, the revisions of MCP's handshake, what a route
knows of one request, and the server's errors as JSON-RPC errors.

Protocol errors are JSON-RPC errors: ``-32700`` (not JSON), ``-32600`` (not a request),
``-32601`` (unknown method), ``-32602`` (bad params, unknown tool or session id named in
params, an unknown split or a task index out of range: nothing is opened), ``-32000``
(the server's own errors; ``data`` is the error payload of every other route: ``code``,
``message``...), ``-32001`` with HTTP 404 (the ``Mcp-Session-Id`` names no open session:
initialize again), ``-32000`` with HTTP 400 (no session named).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidRequest, ServeError, SessionNotFound
from .session import MAX_SEED

#: MCP revisions whose ``initialize`` handshake this server speaks, oldest first.
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
SERVER_ERROR, SESSION_UNKNOWN = -32000, -32001


def negotiate(requested: Any) -> str:
    """The revision to answer ``initialize`` with: the client's when this server speaks it,
    else the newest this server speaks (the client then decides whether to go on)."""
    return requested if requested in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1]


@dataclass
class McpAnswer:
    """An HTTP answer of the endpoint: status, JSON body (``None``: no body) and headers."""

    status: int = 200
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)


def rpc_error(rid: Any, code: int, message: str, data: Any = None, *, status: int = 200) -> McpAnswer:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return McpAnswer(status, {"jsonrpc": "2.0", "id": rid, "error": error})


def rpc_result(rid: Any, result: dict[str, Any], headers: dict[str, str] | None = None) -> McpAnswer:
    return McpAnswer(200, {"jsonrpc": "2.0", "id": rid, "result": result}, headers or {})


class RpcFailure(Exception):
    """Ends a method with its JSON-RPC answer (an error)."""

    def __init__(self, answer: McpAnswer) -> None:
        self.answer = answer


@dataclass(frozen=True)
class McpRequestContext:
    """What the route knows of one HTTP request: the environment it names (``None``: the
    default), the ``Mcp-Session-Id`` header, a ``seed`` and a Task API task (``split`` and
    ``index``) from the URL, and the client."""

    env_ref: str | None
    session_header: str | None
    seed: str | None
    client: str
    split: str | None = None
    index: str | None = None


def whole_number(rid: Any, name: str, value: Any, what: str) -> int | None:
    """``value`` (a JSON integer, or the text of one from the URL) as a whole number from 0
    to :data:`~spade_serve.session.MAX_SEED`; a JSON-RPC ``-32602`` naming ``name``
    otherwise (Unicode digits, signs and spaces included: the URL's number is ASCII digits)."""
    if value is None:
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= len(str(MAX_SEED)):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED:
        shown = json.dumps(value) if isinstance(value, (str, int, float)) else type(value).__name__
        shown = shown if len(shown) <= 40 else shown[:40] + "..."
        raise RpcFailure(rpc_error(rid, INVALID_PARAMS, f"{name} must be {what}, got {shown}"))
    return value


def serve_error(rid: Any, exc: ServeError) -> McpAnswer:
    """A server error as JSON-RPC: ``data`` is the error payload the other routes answer."""
    if isinstance(exc, SessionNotFound):
        return rpc_error(rid, INVALID_PARAMS, exc.message, exc.payload())
    code = INVALID_PARAMS if isinstance(exc, InvalidRequest) else SERVER_ERROR
    return rpc_error(rid, code, exc.message, exc.payload())


__all__ = ["INVALID_PARAMS", "INVALID_REQUEST", "METHOD_NOT_FOUND", "PARSE_ERROR", "PROTOCOL_VERSIONS", "SERVER_ERROR",
           "SESSION_UNKNOWN", "McpAnswer", "McpRequestContext", "RpcFailure", "negotiate", "rpc_error", "rpc_result",
           "serve_error", "whole_number"]
