"""Checks on the replies of a worker, which is untrusted: each decoded value is checked
again before the pool returns it.

The worker applied the environment contract (:mod:`spade_core.contract`) before it
converted a value; these check the decoded reply as a worker that follows the protocol
sends it (exact msgpack types: a float reward, bool flags, a dict info within the size
budget of ``worker_replies.wire_value``), with the contract's messages where the rule is the
contract's. A reply that is no reply the request allows is described by
:func:`what_came`, never by its content.

Separate from the pool because it changes with the protocol and the contract, not with
how the pool schedules its workers (``spade_trainer.distributed.wire`` applies the same
checks to replies that crossed Ray).
"""

from __future__ import annotations

import math
from typing import Any

from spade_core import contract

from . import protocol
from .errors import EnvContractViolation

ResetResult = tuple[str, dict[str, Any]]
StepResult = tuple[str, float, bool, bool, dict[str, Any]]

def _check_info(value: Any, method: str, limit: int = 65_536) -> dict[str, Any]:
    """The worker checked the info when it converted it; this checks it again as decoded
    (a worker is untrusted): a dict, at most :data:`protocol.MAX_INFO_DEPTH` deep, at most
    :data:`protocol.MAX_INFO_ITEMS` values and ``limit`` characters of text. The decoder
    admits only msgpack's plain types (no extension types) and str keys."""
    if type(value) is not dict:
        raise EnvContractViolation(f"{method}() returned info of type {type(value).__name__}, expected dict", method=method)
    if value:
        check_info_size(value, method, limit)
    return value


def check_info_size(info: Any, method: str, limit: int) -> None:
    """The worker's budget (``worker_replies.wire_value``) applied again to the decoded value:
    at most :data:`protocol.MAX_INFO_ITEMS` values (containers included, keys not), no
    deeper than :data:`protocol.MAX_INFO_DEPTH` below ``info``, at most ``limit``
    characters of str/bytes values. Iterative: the value came from an untrusted worker."""
    items = 0
    text = 0
    stack: list[tuple[Any, int]] = [(info, 0)]
    while stack:
        value, depth = stack.pop()
        items += 1
        if items > protocol.MAX_INFO_ITEMS or depth > protocol.MAX_INFO_DEPTH:
            raise EnvContractViolation(f"{method}() returned info that is too large or too deeply nested", method=method)
        kind = type(value)
        if kind is str or kind is bytes:
            text += len(value)
            if text > limit:
                raise EnvContractViolation(f"{method}() returned info holding more than {limit} characters of text", method=method)
        elif kind is dict:
            stack.extend((member, depth + 1) for member in value.values())
        elif kind is list:
            stack.extend((member, depth + 1) for member in value)


def _check_obs(value: Any, method: str, limit: int) -> str:
    return contract.observation(value, method, EnvContractViolation, limit)


def check_reset_reply(value: Any, limit: int) -> ResetResult:
    if not isinstance(value, list) or len(value) != 2 or not isinstance(value[1], dict):
        raise EnvContractViolation("reset() reply is malformed", method="reset")
    return _check_obs(value[0], "reset", limit), _check_info(value[1], "reset", limit)


def check_step_reply(value: Any, limit: int) -> StepResult:
    if type(value) is not list or len(value) != 5:
        raise EnvContractViolation("step() reply is malformed", method="step")
    obs, reward, terminated, truncated, info = value
    if type(reward) is not float or not math.isfinite(reward):
        raise EnvContractViolation(f"step() returned an invalid reward {reward!r}", method="step")
    if type(terminated) is not bool or type(truncated) is not bool or type(info) is not dict:
        raise EnvContractViolation("step() reply has non-bool flags or non-dict info", method="step")
    if type(obs) is not str or len(obs) > limit:
        _check_obs(obs, "step", limit)
    if info:
        check_info_size(info, "step", limit)
    return obs, reward, terminated, truncated, info


def check_call_reply(method: str, value: Any, limit: int) -> Any:
    if method == "solution":
        if isinstance(value, str):
            return _check_obs(value, "solution", limit)
        if isinstance(value, list) and all(isinstance(a, str) for a in value):
            if len(value) > limit or sum(map(len, value)) > limit:
                raise EnvContractViolation(
                    f"solution() returned {len(value)} actions of {sum(map(len, value))} characters in all "
                    f"(limit {limit} of each)", method="solution",
                )
            return value
        raise EnvContractViolation("solution() reply is malformed", method="solution")
    if method == "get_tool_schemas":
        if not isinstance(value, list) or not all(isinstance(s, dict) for s in value):
            raise EnvContractViolation("get_tool_schemas() must return a list of dicts", method=method)
        check_info_size(value, method, limit)
        return value
    return None


def info_size_ok(info: dict[str, Any], limit: int) -> bool:
    try:
        check_info_size(info, "step", limit)
    except EnvContractViolation:
        return False
    return True


def what_came(reply: Any) -> str:
    """A short description of a reply that is not one the request allows (never its
    content: it comes from an untrusted worker)."""
    if reply is None:
        return "the reply is not one this request allows"
    if type(reply) is tuple:
        return "a step reply where this request needs another"
    if type(reply) is not list:
        return f"the reply is a {type(reply).__name__}, not a list"
    if not reply:
        return "the reply is an empty list"
    if reply[0] == protocol.OK:
        return f"an 'ok' reply of {len(reply)} item(s) with a value this request does not allow"
    return f"the reply starts with a {type(reply[0]).__name__}, not 'ok' or 'err'"
