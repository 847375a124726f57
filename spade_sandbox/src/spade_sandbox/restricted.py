"""The ``restricted`` backend: environment code runs **in this process** under RestrictedPython.

For hosts without namespaces, Landlock or seccomp (containers that forbid them, other
kernels). **This is not a security boundary**: the code shares the caller's interpreter,
memory and privileges; allowed modules and Python's object model leave known escapes, and
nothing can bound its memory. It exists so that trusted-ish code (your own environments,
tests) can run where the native sandbox cannot; untrusted code is refused unless the
pool is created with ``allow_insecure=True``.

What it does give:

* the same static check and the same curated builtins / module wrappers as the workers,
  plus RestrictedPython's rewriting of attribute access, item access and iteration
  through guard functions (leading-underscore names are allowed, dunders are not);
* deadlines: a watchdog thread interrupts a call past its deadline by raising an
  exception in the calling thread (pure-Python code only: a single long C call cannot be
  interrupted). RestrictedPython's guards make environment code slower (the benchmark
  measures how much);
* the same value conversion and checks as the process backend (every reply goes through
  msgpack), so results and errors look identical to callers.

A call that times out, runs out of memory or is refused leaves the instance table in an
unknown state, so every instance of that code version is reported lost, as with a killed
worker.
"""

from __future__ import annotations

import ast
import ctypes
import operator
import os
import re
import sys
import threading
import time
import types
import warnings
from dataclasses import dataclass, field
from typing import Any

from . import protocol
from .allowlist import (
    DEFAULT_ALLOWED_MODULES,
    SAFE_DUNDER_ATTRIBUTES,
    SAFE_DUNDER_NAMES,
    attribute_allowed,
    is_dunder,
)
from .errors import (
    ERRORS_BY_KIND,
    EnvCodeError,
    InstanceLost,
    SandboxCrash,
    SandboxError,
    SandboxTimeout,
    SandboxUnavailable,
)
from .limits import SandboxLimits
from .worker_replies import Interrupt

_UNDERSCORE_ERROR = re.compile(r'"(\w+)" is an invalid (?:variable|attribute) name because it starts with "_"')


class _Deadline(Interrupt):
    """Raised inside environment code by the tracer; BaseException so ``except Exception``
    in the environment cannot swallow it."""


class _Watchdog:
    """One thread that interrupts calls past their deadline by raising :class:`_Deadline`
    in the calling thread (``PyThreadState_SetAsyncExc``). Nothing runs on the normal
    path but two lock operations; the exception lands at the next bytecode, so a long
    single C call (a huge regex, a giant allocation) is not interrupted."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._armed: dict[int, tuple[float, int]] = {}
        self._fired: set[int] = set()
        self._next = 0
        self._thread: threading.Thread | None = None

    def arm(self, deadline: float) -> int:
        with self._cv:
            self._next += 1
            self._armed[self._next] = (deadline, threading.get_ident())
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="spade-restricted-watchdog", daemon=True)
                self._thread.start()
            self._cv.notify()
            return self._next

    def disarm(self, token: int) -> bool:
        """Stop watching; True if the deadline fired (any pending interrupt is cleared)."""
        with self._cv:
            self._armed.pop(token, None)
            if token not in self._fired:
                return False
            self._fired.discard(token)
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(threading.get_ident()), None)
        return True

    def _run(self) -> None:
        with self._cv:
            while True:
                if not self._armed:
                    self._cv.wait()
                    continue
                token, (deadline, thread_id) = min(self._armed.items(), key=lambda kv: kv[1][0])
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._cv.wait(wait)
                    continue
                del self._armed[token]
                self._fired.add(token)
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(_Deadline))


_WATCHDOG = _Watchdog()


def _restricted_compile(source: str) -> Any:
    try:
        from RestrictedPython import compile_restricted
        from RestrictedPython.transformer import RestrictingNodeTransformer
    except ImportError:
        raise SandboxUnavailable(
            "the restricted backend needs RestrictedPython (pip install 'spade-sandbox[restricted]')"
        ) from None

    class EnvPolicy(RestrictingNodeTransformer):
        """RestrictedPython's policy, relaxed for the idioms generated environments use
        (and that the static layer has already vetted): private names, the safe dunders
        (``super().__init__``, ``__name__``), annotated and augmented attribute assignment."""

        def error(self, node: Any, info: str) -> None:
            m = _UNDERSCORE_ERROR.search(info)
            if m and (not is_dunder(m.group(1)) or m.group(1) in SAFE_DUNDER_ATTRIBUTES | SAFE_DUNDER_NAMES):
                return
            super().error(node, info)

        def visit_AnnAssign(self, node: ast.AnnAssign) -> Any:
            return self.node_contents_visit(node)

        def visit_AugAssign(self, node: ast.AugAssign) -> Any:
            if isinstance(node.target, ast.Attribute):
                return self.node_contents_visit(node)
            return super().visit_AugAssign(node)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        return compile_restricted(source, "<env>", "exec", policy=EnvPolicy)


def _guarded_getattr(obj: Any, name: str, default: Any = None, *rest: Any) -> Any:
    if not isinstance(name, str) or not attribute_allowed(name):
        raise AttributeError(f"attribute {name!r} is not accessible in the sandbox")
    return getattr(obj, name) if default is None and not rest else getattr(obj, name, default)


def _getitem(obj: Any, key: Any) -> Any:
    return obj[key]


def _write(obj: Any) -> Any:
    return obj


_INPLACE = {
    "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
    "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow, "<<=": operator.ilshift,
    ">>=": operator.irshift, "|=": operator.ior, "&=": operator.iand, "^=": operator.ixor,
    "@=": operator.imatmul,
}


def _inplacevar(op: str, x: Any, y: Any) -> Any:
    return _INPLACE[op](x, y)


def load_restricted_class(source: str, class_name: str, allowed: frozenset[str]) -> type:
    from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence
    from RestrictedPython.PrintCollector import PrintCollector

    from .guard import make_builtins, preimport

    failed = preimport(sorted(allowed - DEFAULT_ALLOWED_MODULES))
    if failed:
        raise SandboxUnavailable(f"allowed module(s) cannot be imported: {', '.join(failed)}")
    preimport(sorted(DEFAULT_ALLOWED_MODULES))
    code = _restricted_compile(source)
    # dataclasses and typing look the defining module up in sys.modules.
    module = types.ModuleType(f"spade_env_restricted_{abs(hash(source)) & 0xFFFFFFFF:08x}")
    sys.modules[module.__name__] = module
    glb: dict[str, Any] = module.__dict__
    glb.update({
        "__builtins__": make_builtins(allowed),
        "__metaclass__": type,
        "_getattr_": _guarded_getattr,
        "_getitem_": _getitem,
        "_getiter_": iter,
        "_write_": _write,
        "_inplacevar_": _inplacevar,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
        "_print_": PrintCollector,
        "_apply_": lambda f, *a, **k: f(*a, **k),
    })
    exec(code, glb)  # noqa: S102 - the documented, labelled in-process mode
    cls = glb.get(class_name)
    if not isinstance(cls, type):
        raise NameError(f"class {class_name!r} is not defined by the source")
    return cls


@dataclass(eq=False)
class InProcessLink:
    """Stands where a :class:`~spade_sandbox.channel.WorkerLink` would: same attributes,
    same request/reply messages, but answered by an instance table in this process."""

    id: int
    key: protocol.WorkerKey
    table: Any
    call_timeout_s: float
    layers: list[str] = field(default_factory=lambda: ["restricted-python"])
    missing_layers: dict[str, str] = field(default_factory=dict)
    timings_us: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    instances: set[int] = field(default_factory=set)
    next_instance: int = 0
    death: SandboxError | None = None
    pending: Any = None

    @property
    def pid(self) -> int:
        return os.getpid()

    @property
    def alive(self) -> bool:
        return self.death is None

    def request(self, message: Any, what: str, timeout: float) -> Any:
        if self.death is not None:
            raise self.lost_error()
        self.send(message, what, timeout)
        return self.receive(what, time.monotonic() + timeout, timeout)

    def call(self, message: Any, what: str) -> Any:
        """One request with this link's ``call_timeout_s`` (what the pool's single calls use)."""
        return self.request(message, what, self.call_timeout_s)

    def step(self, iid: int, action: str) -> Any:
        """A single step (the pool's ``step``): the msgpack reply, as :meth:`call` gives."""
        return self.call(["step", iid, action], "step()")

    def send(self, message: Any, what: str, timeout: float) -> None:
        self.pending = message

    def receive(self, what: str, deadline: float, timeout: float, *, kernel_timeout: bool = False) -> Any:
        message, self.pending = self.pending, None

        token = _WATCHDOG.arm(deadline)
        try:
            reply = self.table.handle(protocol.decode_trusted(protocol.encode(message)[protocol.HEADER.size :]))
        except _Deadline:
            self._die(SandboxTimeout(f"{what} did not return within {timeout:g} s (restricted backend)"))
        except protocol.WorkerFatal as fatal:
            cls = ERRORS_BY_KIND.get(fatal.reply[1], SandboxCrash)
            if not cls.worker_fatal:  # a fatal reply ends the worker whatever kind it names
                cls = SandboxCrash
            self._die(cls(f"{fatal.reply[2]} (restricted backend)", kind=fatal.reply[1]))
        finally:
            fired = _WATCHDOG.disarm(token)
        if fired:  # the deadline passed just as the call returned: same outcome
            self._die(SandboxTimeout(f"{what} did not return within {timeout:g} s (restricted backend)"))
        # The same conversion a worker's reply gets: only plain msgpack types come back.
        return protocol.decode_untrusted(protocol.encode(reply)[protocol.HEADER.size :], max_str_len=1 << 30)

    def _die(self, error: SandboxError) -> None:
        error.message += f"; its {len(self.instances)} instance(s) are lost"
        self.death = error
        raise error

    def lost_error(self) -> InstanceLost:
        assert self.death is not None
        return InstanceLost(f"instance lost because its code version failed earlier: {self.death.message}")

    def shutdown(self, wait: bool = True) -> None:
        if self.death is None:
            self.death = SandboxCrash("the restricted code version was shut down")
        self.table = None

    def kill(self) -> None:
        self.shutdown()


class RestrictedBackend:
    """In-process RestrictedPython execution; see the module docstring for what it is not."""

    name = "restricted"

    def start_worker(
        self, worker_id: int, key: protocol.WorkerKey, spec: dict[str, Any], limits: SandboxLimits
    ) -> InProcessLink:
        from .worker_instances import Instances
        from .worker_replies import classify

        if spec.get("require_secure", True):
            raise SandboxUnavailable(
                "the restricted backend is not a security boundary; refusing to run untrusted code "
                "(create the pool with allow_insecure=True to use it anyway)"
            )
        allowed = DEFAULT_ALLOWED_MODULES | frozenset(spec.get("allowed_modules", ()))
        try:
            cls = load_restricted_class(spec["source"], spec["class_name"], allowed)
        except SandboxError:
            raise
        except SyntaxError as exc:
            raise EnvCodeError(f"RestrictedPython rejected the source: {exc}") from None
        except BaseException as exc:
            reply = classify(exc, "loading the environment")
            raise EnvCodeError(str(reply[2]), env_traceback=reply[3]) from None
        table = Instances(cls, int(spec.get("max_output_chars", 65536)))
        return InProcessLink(worker_id, key, table, limits.call_timeout_s)

    def close(self, wait: bool = True) -> None:
        return None
