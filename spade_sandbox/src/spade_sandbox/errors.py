"""Errors raised by the sandbox.

Every error is a :class:`spade_core.errors.SpadeError`. :class:`SandboxError` carries
``kind`` (a short machine-readable cause: ``"timeout"``, ``"memory"``, ``"crash"``,
``"policy"``, ``"env_code"``, ``"contract"``, ``"static"``, ``"unavailable"``,
``"request"``) and ``env_traceback`` (the environment's own traceback, when the failure
happened inside environment code and the worker could still report it).

Which errors leave the worker alive is a property of the class, ``worker_fatal``
(``False`` unless said otherwise), read wherever that matters (the pool, ``spade serve``'s
sessions, the TRL adapter) instead of a list of kinds:

* :class:`EnvCodeError` and :class:`EnvContractViolation` — the environment raised or
  returned garbage; the worker and its other instances keep running.
* :class:`SandboxTimeout`, :class:`SandboxMemoryError`, :class:`SandboxCrash`,
  :class:`SandboxPolicyViolation`, :class:`SandboxUnavailable` (``worker_fatal``) — the
  worker was killed or has exited; every instance it held is lost
  and later calls on those handles raise :class:`InstanceLost` (a :class:`SandboxCrash`:
  "instance lost ...", nothing of that call ran). A worker killed by a signal the
  sandbox did not send is a :class:`WorkerKilled` (a :class:`SandboxCrash` too).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from spade_core.errors import EnvContractError, SpadeError

if TYPE_CHECKING:
    from .static import StaticFinding


class SandboxError(SpadeError):
    """Base of every sandbox failure."""

    kind: str = "sandbox"
    #: The worker that raised it is gone with every instance it held (it was killed, or
    #: exited by itself): the pool retires it and later calls on its handles raise
    #: :class:`InstanceLost`.
    worker_fatal: bool = False

    def __init__(self, message: str, *, env_traceback: str | None = None, kind: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.env_traceback = env_traceback
        if kind is not None:
            self.kind = kind

    def __str__(self) -> str:
        if self.env_traceback:
            return f"{self.message}\n--- environment traceback ---\n{self.env_traceback.rstrip()}"
        return self.message


class SandboxTimeout(SandboxError):
    """A call exceeded its wall-clock deadline (or the worker its CPU-time limit); the worker was killed."""

    kind = "timeout"
    worker_fatal = True


class SandboxMemoryError(SandboxError):
    """The worker exceeded its memory limit; it was killed."""

    kind = "memory"
    worker_fatal = True


class SandboxCrash(SandboxError):
    """The worker died (crash, exit, signal), or the instance was lost with its worker."""

    kind = "crash"
    worker_fatal = True


class InstanceLost(SandboxCrash):
    """The instance's worker had died before this call (an earlier call killed it, or
    something outside did): nothing of this call ran. Its ``kind`` stays ``"crash"``."""


class WorkerKilled(SandboxCrash):
    """The worker was killed by a signal the sandbox did not send (an operator, the
    kernel's OOM killer acting for the whole machine): the death says nothing about the
    call that was running, if any. Its ``kind`` stays ``"crash"``."""


class SandboxPolicyViolation(SandboxError):
    """Environment code attempted an operation the sandbox forbids (file, network, process,
    forbidden syscall); the worker was killed."""

    kind = "policy"
    worker_fatal = True


class EnvCodeError(SandboxError):
    """Environment code raised an exception (while loading, constructing, or inside a
    method). The worker stays alive; ``env_traceback`` holds the environment's traceback."""

    kind = "env_code"


class EnvMethodMissing(EnvCodeError, NotImplementedError):
    """The environment does not define the requested optional method (e.g. ``solution``)."""

    kind = "missing_method"


class EnvContractViolation(SandboxError, EnvContractError):
    """The environment returned a value that breaks the contract or the sandbox's limits
    (non-str observation, non-finite reward, oversized output...). The worker stays alive."""

    kind = "contract"

    def __init__(
        self, message: str, *, method: str | None = None, env_traceback: str | None = None
    ) -> None:
        SandboxError.__init__(self, message, env_traceback=env_traceback)
        self.method = method


class StaticCheckError(SandboxError):
    """The static layer rejected the source; ``findings`` lists every problem found."""

    kind = "static"

    def __init__(self, findings: Sequence[StaticFinding]) -> None:
        self.findings = list(findings)
        lines = [f"  line {f.line}, col {f.col}: [{f.rule}] {f.message}" for f in self.findings]
        super().__init__("environment source rejected by the static check:\n" + "\n".join(lines))


class SandboxUnavailable(SandboxError):
    """The sandbox cannot run here as configured (missing isolation layers and no explicit
    ``allow_insecure``, unknown backend, zygote failed to start...)."""

    kind = "unavailable"
    worker_fatal = True


class SandboxRequestError(SandboxError, ValueError):
    """The caller passed an invalid request (closed handle, non-str action, huge seed...)."""

    kind = "request"


#: Error classes by ``kind``, used to rebuild errors reported by a worker.
ERRORS_BY_KIND: dict[str, type[SandboxError]] = {
    cls.kind: cls
    for cls in (
        SandboxTimeout,
        SandboxMemoryError,
        SandboxCrash,
        SandboxPolicyViolation,
        EnvCodeError,
        EnvMethodMissing,
        SandboxUnavailable,
        SandboxRequestError,
    )
}


def error_from_reply(reply: Any, what: str) -> SandboxError:
    """Rebuild the error a worker reported (``["err", kind, message, traceback, ...]``);
    a malformed reply is a :class:`SandboxCrash` naming ``what`` was being done."""
    if not isinstance(reply, list) or len(reply) < 3 or not isinstance(reply[1], str):
        return SandboxCrash(f"worker sent a malformed error reply during {what}")
    kind, message = reply[1], str(reply[2])
    tb = reply[3] if len(reply) > 3 and isinstance(reply[3], str) else None
    if kind == "contract":
        method = reply[4] if len(reply) > 4 and isinstance(reply[4], str) else None
        return EnvContractViolation(message, method=method, env_traceback=tb)
    cls = ERRORS_BY_KIND.get(kind, SandboxCrash)
    return cls(message, env_traceback=tb)

__all__ = [
    "ERRORS_BY_KIND",
    "error_from_reply",
    "EnvCodeError",
    "EnvContractViolation",
    "EnvMethodMissing",
    "InstanceLost",
    "SandboxCrash",
    "SandboxError",
    "SandboxMemoryError",
    "SandboxPolicyViolation",
    "SandboxRequestError",
    "SandboxTimeout",
    "SandboxUnavailable",
    "StaticCheckError",
    "WorkerKilled",
]
