"""What a worker sends back: an exception of environment code classified into an error
reply (or :class:`~spade_sandbox.protocol.WorkerFatal` when the worker must end), and
results converted to plain msgpack types within their budgets, after the contract's
checks (:mod:`spade_core.contract`, through :mod:`spade_sandbox.core_rules`).

Imported by the zygote: standard library only.
"""

from __future__ import annotations

import errno
import traceback
from typing import Any

from . import protocol
from .core_rules import contract as _contract
from .guard import ENV_FILENAME
from .protocol import EXIT_CPU, EXIT_MEMORY, EXIT_POLICY, WorkerFatal

MAX_TRACEBACK_CHARS = 8000


#: Longest exception message sent back; environment code chooses its messages, so an
#: unbounded one would let it hand the caller megabytes through every error.
MAX_MESSAGE_CHARS = 2000


MAX_INFO_DEPTH = protocol.MAX_INFO_DEPTH


MAX_INFO_ITEMS = protocol.MAX_INFO_ITEMS


_INT64 = (-(2**63), 2**64 - 1)


class CpuLimitExceeded(BaseException):
    """Raised by the SIGXCPU handler: the soft CPU-time limit was reached."""


class Interrupt(BaseException):
    """Raised by the host to abort a request (the in-process backend's deadline); passes
    through the dispatch untouched."""


class ContractBroken(Exception):
    """The environment returned a value against the contract (the checks of
    :mod:`spade_core.contract` raise it here; it becomes a ``contract`` error reply)."""

    def __init__(self, message: str, method: str) -> None:
        super().__init__(message)
        self.method = method


def env_traceback(exc: BaseException) -> str:
    """The traceback of ``exc`` restricted to environment frames (and what they called)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != ENV_FILENAME:
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(exc), exc, tb if tb is not None else exc.__traceback__))
    return text[-MAX_TRACEBACK_CHARS:]


def _is_denied_by_os(exc: BaseException) -> bool:
    return isinstance(exc, PermissionError) and exc.errno in (errno.EPERM, errno.EACCES)


def brief(exc: BaseException) -> str:
    """``str(exc)``, cut to :data:`MAX_MESSAGE_CHARS` (saying how much was cut)."""
    try:
        text = str(exc)
    except Exception:  # a hostile __str__
        text = f"<{type(exc).__name__} with an unprintable message>"
    if len(text) > MAX_MESSAGE_CHARS:
        text = f"{text[:MAX_MESSAGE_CHARS]}... ({len(text) - MAX_MESSAGE_CHARS} characters cut)"
    return text


def classify(exc: BaseException, what: str) -> list[Any]:
    """Turn an exception from environment code into an error reply; raise
    :class:`~spade_sandbox.protocol.WorkerFatal` when the worker must not continue."""
    if isinstance(exc, Interrupt):
        raise exc
    if isinstance(exc, MemoryError):
        raise WorkerFatal(protocol.error_reply("memory", f"{what} ran out of memory (MemoryError)"), EXIT_MEMORY)
    if isinstance(exc, CpuLimitExceeded):
        raise WorkerFatal(protocol.error_reply("timeout", f"{what} exceeded the CPU-time limit"), EXIT_CPU)
    tb = env_traceback(exc)
    if _is_denied_by_os(exc):
        raise WorkerFatal(
            protocol.error_reply("policy", f"{what} attempted a forbidden operation: {brief(exc)}", tb), EXIT_POLICY
        )
    if isinstance(exc, ContractBroken):
        return protocol.error_reply("contract", brief(exc), None) + [exc.method]
    return protocol.error_reply("env_code", f"{what} raised {type(exc).__name__}: {brief(exc)}", tb)


def wire_value(value: Any, depth: int = 0, budget: list[int] | None = None, text_limit: int = 65536) -> Any:
    """Plain msgpack-able copy of an info value; unknown objects become their repr.
    ``budget`` is ``[items left, characters of text left]``."""
    if budget is None:
        budget = [MAX_INFO_ITEMS, text_limit]
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_INFO_DEPTH:
        raise ContractBroken("info is too large or too deeply nested", "info")
    if isinstance(value, (str, bytes)):
        # The real length: a subclass's __len__ may lie, msgpack sends every character.
        budget[1] -= str.__len__(value) if isinstance(value, str) else bytes.__len__(value)
        if budget[1] < 0:
            raise ContractBroken(f"info holds more than {text_limit} characters of text", "info")
        return value
    if value is None or isinstance(value, (bool, float)):
        return value
    if isinstance(value, int):
        return value if _INT64[0] <= value <= _INT64[1] else str(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return [wire_value(v, depth + 1, budget, text_limit) for v in value]
    if isinstance(value, dict):
        return {str(k): wire_value(v, depth + 1, budget, text_limit) for k, v in value.items()}
    try:
        return repr(value)[:1000]
    except Exception:
        return f"<unrepresentable {type(value).__name__}>"


def _info(value: Any, method: str, limit: int = 65536) -> dict[str, Any]:
    return wire_value(_contract.info(value, method, ContractBroken), text_limit=limit)


def wire_reset(result: Any, limit: int) -> list[Any]:
    """A reset result as the contract has it (:mod:`spade_core.contract`), converted for the wire."""
    obs, info = _contract.reset_pair(result, ContractBroken)
    return [_contract.observation(obs, "reset", ContractBroken, limit), _info(info, "reset", limit)]


_PLAIN = frozenset({str, int, float, bool, type(None)})


def plain_info(info: Any, limit: int) -> bool:
    """Fast path: a flat dict of str keys and scalar values (64-bit ints, text within
    ``limit`` characters in all) needs no conversion."""
    if type(info) is not dict:
        return False
    text = 0
    for k, v in info.items():
        t = type(v)
        if type(k) is not str or t not in _PLAIN:
            return False
        if t is str:
            text += len(v)
        elif t is int and not _INT64[0] <= v <= _INT64[1]:
            return False
    return text <= limit


def wire_step(result: Any, limit: int) -> list[Any]:
    """A step result as the contract has it (:mod:`spade_core.contract`), converted for
    the wire; values already plain skip the calls."""
    obs, reward, terminated, truncated, info = _contract.step_tuple(result, ContractBroken)
    if type(obs) is not str or str.__len__(obs) > limit:
        obs = _contract.observation(obs, "step", ContractBroken, limit)
    if type(reward) is not float or reward - reward != 0.0:  # not finite: inf - inf and nan - nan are nan
        reward = _contract.reward(reward, ContractBroken)
    if terminated is not True and terminated is not False:
        terminated = _contract.flag(terminated, "terminated", ContractBroken)
    if truncated is not True and truncated is not False:
        truncated = _contract.flag(truncated, "truncated", ContractBroken)
    if not plain_info(info, limit):
        info = _info(info, "step", limit)
    return [obs, reward, terminated, truncated, info]


def wire_call(method: str, result: Any, limit: int) -> Any:
    if method == "solution":
        return _contract.solution(result, ContractBroken, limit)
    if method == "get_tool_schemas":
        return wire_value(_contract.tool_schemas(result, ContractBroken), text_limit=limit)
    return None  # close
