"""What crosses between a Ray actor and the driver: plain lists, strings, numbers, dicts.

Nothing is pickled but these plain values: no handle, environment object or exception
instance crosses. A sandbox error travels as ``["err", class name, message, traceback,
extra]`` and is rebuilt on the driver as the same :mod:`spade_sandbox.errors` class, so
the rollout engine's handling (the hang penalty for :class:`SandboxTimeout`, per-episode
failure for the rest) is the same as with a local pool. Every result is validated again
on the driver with the sandbox's own reply checks before it reaches the trainer.
"""

from __future__ import annotations

from typing import Any

from spade_sandbox.errors import EnvContractViolation, SandboxCrash, SandboxError, StaticCheckError
from spade_sandbox.pool import ResetResult, StepResult, check_call_reply, check_reset_reply, check_step_reply
from spade_sandbox.static import StaticFinding

from spade_sandbox import errors as sandbox_errors

OK = "ok"
ERR = "err"

#: Error classes a reply may name; anything else is rebuilt as a crash of the actor.
_ERROR_CLASSES: dict[str, type[SandboxError]] = {
    name: cls
    for name in sandbox_errors.__all__
    if isinstance(cls := getattr(sandbox_errors, name), type) and issubclass(cls, SandboxError)
}


def encode_error(exc: SandboxError) -> list[Any]:
    """The plain form of a sandbox error (see the module docstring)."""
    extra: Any = None
    if isinstance(exc, StaticCheckError):
        extra = [[f.line, f.col, f.rule, f.message] for f in exc.findings]
    elif isinstance(exc, EnvContractViolation):
        extra = exc.method
    message = getattr(exc, "message", str(exc))
    return [ERR, type(exc).__name__, message, exc.env_traceback, extra]


def decode_error(reply: Any, what: str) -> SandboxError:
    """Rebuild the error an actor reported; a malformed reply becomes :class:`SandboxCrash`."""
    if type(reply) is not list or len(reply) != 5 or reply[0] != ERR or not isinstance(reply[1], str):
        return SandboxCrash(f"Ray sandbox actor sent a malformed error reply during {what}")
    _, name, message, tb, extra = reply
    tb = tb if isinstance(tb, str) else None
    cls = _ERROR_CLASSES.get(name)
    if cls is None:
        return SandboxCrash(f"Ray sandbox actor reported an unknown error {name!r} during {what}: {message}")
    if cls is StaticCheckError:
        findings = [StaticFinding(int(f[0]), int(f[1]), str(f[2]), str(f[3])) for f in extra or []]
        return StaticCheckError(findings)
    if cls is EnvContractViolation:
        return EnvContractViolation(str(message), method=extra if isinstance(extra, str) else None, env_traceback=tb)
    return cls(str(message), env_traceback=tb)


def encode_reset(result: ResetResult | SandboxError) -> list[Any]:
    if isinstance(result, SandboxError):
        return encode_error(result)
    obs, info = result
    return [OK, obs, info]


def encode_step(result: StepResult | SandboxError) -> list[Any]:
    if isinstance(result, SandboxError):
        return encode_error(result)
    return [OK, *result]


def decode_reset(reply: Any, limit: int) -> ResetResult | SandboxError:
    """``(obs, info)`` after the sandbox's reset checks, or the rebuilt error."""
    if type(reply) is list and len(reply) == 3 and reply[0] == OK:
        try:
            return check_reset_reply(reply[1:], limit)
        except SandboxError as exc:
            return exc
    return decode_error(reply, "reset()")


def decode_step(reply: Any, limit: int) -> StepResult | SandboxError:
    """The step 5-tuple after the sandbox's step checks, or the rebuilt error."""
    if type(reply) is list and len(reply) == 6 and reply[0] == OK:
        try:
            return check_step_reply(reply[1:], limit)
        except SandboxError as exc:
            return exc
    return decode_error(reply, "step()")


def decode_call(reply: Any, method: str, limit: int) -> Any:
    """The checked value of ``call(method)``; raises the rebuilt error."""
    if type(reply) is list and len(reply) == 2 and reply[0] == OK:
        return check_call_reply(method, reply[1], limit)
    raise decode_error(reply, f"{method}()")
