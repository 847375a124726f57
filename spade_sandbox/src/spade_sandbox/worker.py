"""The worker: one process per environment code version, holding many instances.

Runs in a child forked by the zygote. :func:`run` applies the OS layers, loads the
source with the runtime guard, reports ready, then answers requests until its channel
closes. Every value sent back is converted to plain msgpack types here; the pool checks
them again (the worker is not trusted).

Exit codes tell the zygote (and so the pool) why a worker ended when it could not say so
itself: see :data:`EXIT_CODES`.

Imported by the zygote: standard library and msgpack only.
"""

from __future__ import annotations

import builtins
import errno
import gc
import linecache
import marshal
import math
import os
import resource
import signal
import sys
import time
import traceback
import types
from itertools import repeat
from operator import contains, itemgetter
from typing import Any

import msgpack

from . import native, protocol
from .allowlist import DEFAULT_ALLOWED_MODULES
from .core_rules import contract as _contract
from .guard import ENV_FILENAME, compile_guarded, disarm, make_builtins, rearm
from .hardening import LayerOptions, apply_layers, secure_enough
from .protocol import (  # noqa: F401 (EXIT_CODES: re-exported, the pool reads it here too)
    EXIT_CODES,
    EXIT_CPU,
    EXIT_LOAD,
    EXIT_MEMORY,
    EXIT_POLICY,
    EXIT_PROTOCOL,
    EXIT_UNAVAILABLE,
    WorkerFatal,
)

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


def _on_sigxcpu(signum: int, frame: Any) -> None:
    raise CpuLimitExceeded("CPU-time limit exceeded")


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


# --- value conversion -------------------------------------------------------------------


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
_first = itemgetter(0)


def _plain_info(info: Any, limit: int) -> bool:
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
    if not _plain_info(info, limit):
        info = _info(info, "step", limit)
    return [obs, reward, terminated, truncated, info]


def wire_call(method: str, result: Any, limit: int) -> Any:
    if method == "solution":
        return _contract.solution(result, ContractBroken, limit)
    if method == "get_tool_schemas":
        return wire_value(_contract.tool_schemas(result, ContractBroken), text_limit=limit)
    return None  # close


# --- the instance table ------------------------------------------------------------------


class Instances:
    """The environment instances of one worker and the request dispatch."""

    CALLABLE = frozenset({"solution", "get_tool_schemas", "close"})

    def __init__(self, cls: type, max_output_chars: int) -> None:
        self.cls = cls
        self.limit = max_output_chars
        self.live: dict[int, Any] = {}
        #: Bumped whenever ``live`` gains or loses an instance (keys the batch memo below).
        self.generation = 0
        #: The last fast batch: (live table, generation, ids, instances, their ``__dict__``s).
        self._last_batch: tuple[dict[int, Any], int, list[int], list[Any], list[Any]] | None = None
        #: ``cls.step`` when it is a plain function found on the class itself or a base
        #: (batches may then call it directly); ``None`` otherwise.
        self.step_function: Any = None
        #: ``native.fast.encode_step_columns`` in a worker serving with the C fast path
        #: (set by :func:`serve`): a batch of plain results is then answered with its
        #: msgpack payload encoded in one pass (``bytes``), byte for byte what packing the
        #: reply list gives.
        self.encode_columns: Any = None
        for klass in cls.__mro__:
            if "step" in klass.__dict__:
                found = klass.__dict__["step"]
                self.step_function = found if type(found) is types.FunctionType else None
                break
        if any("__getattribute__" in klass.__dict__ for klass in cls.__mro__[:-1]):
            self.step_function = None  # attribute access is the class's own business

    def handle(self, msg: list[Any]) -> list[Any] | bytes:
        op = msg[0]
        if op == "step":
            return self.step(msg[1], msg[2])
        if op == "reset":
            return self.reset(msg[1], msg[2])
        if op == "step_cols":
            return self.step_columns(msg[1], msg[2])
        if op == "step_many":
            return [protocol.OK, [self.step(i, a) for i, a in msg[1]]]
        if op == "reset_many":
            return [protocol.OK, [self.reset(i, s) for i, s in msg[1]]]
        if op == "new":
            return self.new(msg[1])
        if op == "call":
            return self.call(msg[1], msg[2])
        if op == "drop":
            return self.drop(msg[1])
        if op == "ping":
            return [protocol.OK, len(self.live)]
        return protocol.error_reply("request", f"unknown request {op!r}")

    def _get(self, iid: int) -> Any:
        inst = self.live.get(iid)
        if inst is None:
            raise KeyError(iid)
        return inst

    def new(self, iid: int) -> list[Any]:
        try:
            self.live[iid] = self.cls()
            self.generation += 1
        except BaseException as exc:
            return classify(exc, f"{self.cls.__name__}()")
        return [protocol.OK, None]

    def reset(self, iid: int, seed: Any) -> list[Any]:
        try:
            inst = self._get(iid)
        except KeyError:
            return protocol.error_reply("request", f"no instance {iid} in this worker")
        try:
            return [protocol.OK, wire_reset(inst.reset(seed=seed), self.limit)]
        except BaseException as exc:
            return classify(exc, "reset()")

    def step(self, iid: int, action: Any) -> list[Any]:
        inst = self.live.get(iid)
        if inst is None:
            return protocol.error_reply("request", f"no instance {iid} in this worker")
        try:
            r = inst.step(action)
            # The usual result needs no conversion: plain types, finite reward, no info.
            if type(r) is tuple and len(r) == 5:
                o, rw, te, tr, inf = r
                if (
                    type(o) is str
                    and len(o) <= self.limit
                    and type(rw) is float
                    and rw - rw == 0.0  # finite: inf - inf and nan - nan are nan
                    and (te is True or te is False)
                    and (tr is True or tr is False)
                    and type(inf) is dict
                    and not inf
                ):
                    return [protocol.OK, r]
            return [protocol.OK, wire_step(r, self.limit)]
        except BaseException as exc:
            return classify(exc, "step()")

    def step_columns(self, iids: list[int], actions: list[str]) -> list[Any] | bytes:
        """Batched step with a columnar reply: ``["ok", obs, rewards, terminated, truncated,
        infos, errors]`` where ``errors`` is ``[[index, *error_reply], ...]`` (in index
        order) and the columns hold neutral placeholders at those indexes.

        Every step runs first, in order; then the results are transposed with ``zip`` and
        checked with whole-column operations. Anything unusual (an error, a non-plain value)
        sends the batch through the per-item conversion of :func:`wire_step`. A batch that
        names one instance twice takes the per-item path from the start, so each result is
        converted before the next step of that instance can change what it refers to."""
        if len(set(iids)) != len(iids):
            return self._step_items(iids, actions)
        live = self.live
        out: list[Any] = []
        append = out.append
        bad: list[Any] = []
        insts = self._plain_steppers(iids, actions)
        if insts is not None:
            self._step_all(insts, actions, out, bad)
            iids = []  # all stepped
        for n, iid in enumerate(iids):
            inst = live.get(iid)
            if inst is None:
                bad.append([n, *protocol.error_reply("request", f"no instance {iid} in this worker")])
                append(None)
                continue
            try:
                append(inst.step(actions[n]))
            except BaseException as exc:
                bad.append([n, *classify(exc, "step()")])
                append(None)
        limit = self.limit
        if not bad and self.encode_columns is not None:
            encoded = self.encode_columns(out, limit)
            if encoded is not None:
                return encoded
        if not bad and out and set(map(type, out)) == {tuple} and set(map(len, out)) == {5}:
            obs, rewards, terms, truncs, infos = zip(*out, strict=True)
            if (
                set(map(type, obs)) == {str}
                and max(map(len, obs)) <= limit
                and set(map(type, rewards)) == {float}
                # A finite sum means every reward is finite (inf and nan propagate).
                and (math.isfinite(sum(rewards)) or all(map(math.isfinite, rewards)))
                and set(map(type, terms)) == {bool}
                and set(map(type, truncs)) == {bool}
                and set(map(type, infos)) == {dict}
                and (not any(infos) or all(map(_plain_info, infos, repeat(limit))))
            ):
                return [protocol.OK, obs, rewards, terms, truncs, infos, []]
        return self._columns(out, bad)

    def _plain_steppers(self, iids: list[int], actions: list[str]) -> list[Any] | None:
        """The instances, when every one is known and ``step`` is the class's own plain
        function (not shadowed on the instance), so that :meth:`_step_all` may call it
        directly; otherwise ``None`` (step one by one)."""
        fn = self.step_function
        if fn is None or len(actions) != len(iids):
            return None
        last = self._last_batch
        if last is not None and last[0] is self.live and last[1] == self.generation and last[2] == iids:
            # The same instances as the last batch (the usual rollout): only the shadowing
            # check runs again, on their remembered attribute dicts.
            insts, attrs = last[3], last[4]
        else:
            try:
                insts = list(map(self.live.__getitem__, iids))
                attrs = list(map(vars, insts))
            except (KeyError, TypeError):  # unknown instance; instances without a __dict__
                return None
            self._last_batch = (self.live, self.generation, iids, insts, attrs)
        if any(map(contains, attrs, repeat("step"))):
            return None
        return insts

    def _step_all(self, insts: list[Any], actions: list[str], out: list[Any], bad: list[Any]) -> None:
        """Call the class's step function on every instance in order, appending each result
        to ``out`` (``None`` and an entry in ``bad`` where it raised). The calls run inside
        ``list.extend(map(...))``, with no interpreted loop around them: extend keeps what
        it appended before an exception, so the batch resumes after the failing item."""
        fn = self.step_function
        start, n = 0, len(insts)
        while start < n:
            try:
                out.extend(map(fn, insts[start:] if start else insts, actions[start:] if start else actions))
                return
            except BaseException as exc:
                failed = len(out)
                bad.append([failed, *classify(exc, "step()")])
                out.append(None)
                start = failed + 1

    def _columns(self, out: list[Any], errors: list[Any]) -> list[Any]:
        """Per-item conversion of step results (``None`` where ``errors`` already holds
        the item's error) into the columnar reply."""
        limit = self.limit
        obs: list[Any] = []
        rewards: list[Any] = []
        terms: list[Any] = []
        truncs: list[Any] = []
        infos: list[Any] = []
        failed = {e[0] for e in errors}
        for n, r in enumerate(out):
            o, rw, te, tr, inf = "", 0.0, False, False, {}
            if n not in failed:
                try:
                    o, rw, te, tr, inf = wire_step(r, limit)
                except BaseException as exc:
                    errors.append([n, *classify(exc, "step()")])
                    o, rw, te, tr, inf = "", 0.0, False, False, {}
            obs.append(o)
            rewards.append(rw)
            terms.append(te)
            truncs.append(tr)
            infos.append(inf)
        errors.sort(key=_first)
        return [protocol.OK, obs, rewards, terms, truncs, infos, errors]

    def _step_items(self, iids: list[int], actions: list[str]) -> list[Any]:
        """Columnar reply built one step at a time (each result converted at once)."""
        out: list[Any] = []
        errors: list[Any] = []
        for n, iid in enumerate(iids):
            inst = self.live.get(iid)
            if inst is None:
                errors.append([n, *protocol.error_reply("request", f"no instance {iid} in this worker")])
                out.append(None)
                continue
            try:
                o, rw, te, tr, inf = wire_step(inst.step(actions[n]), self.limit)
                # A flat info passes through unconverted: copy it, or a later step of the
                # same instance could change what this result reports.
                out.append((o, rw, te, tr, dict(inf)))
            except BaseException as exc:
                errors.append([n, *classify(exc, "step()")])
                out.append(None)
        return self._columns(out, errors)

    def call(self, iid: int, method: str) -> list[Any]:
        if method not in self.CALLABLE:
            return protocol.error_reply("request", f"method {method!r} may not be called")
        try:
            inst = self._get(iid)
        except KeyError:
            return protocol.error_reply("request", f"no instance {iid} in this worker")
        fn = getattr(inst, method, None)
        if fn is None and method == "get_tool_schemas":
            schemas = getattr(inst, "tool_schemas", None)
            fn = schemas if callable(schemas) else (lambda: schemas)
        if fn is None:
            if method == "close":
                return [protocol.OK, None]
            return protocol.error_reply("missing_method", f"{self.cls.__name__} does not define {method}()")
        try:
            return [protocol.OK, wire_call(method, fn(), self.limit)]
        except BaseException as exc:
            return classify(exc, f"{method}()")

    def drop(self, iid: int) -> list[Any]:
        inst = self.live.pop(iid, None)
        self.generation += 1
        if inst is not None:
            fn = getattr(inst, "close", None)
            if fn is not None:
                try:
                    fn()
                except BaseException as exc:
                    return classify(exc, "close()")
        return [protocol.OK, None]


def sent_code(spec: dict[str, Any]) -> types.CodeType | None:
    """The environment's code as the pool compiled it (:func:`~spade_sandbox.guard.compile_for_worker`,
    marshalled into ``spec["code"]`` by an interpreter of version ``spec["code_python"]``),
    taken out of ``spec``; ``None`` when none was sent or this interpreter cannot load it
    (the worker then compiles the source itself). A worker that compiles nothing keeps none
    of the compiler's memory among its private pages (about 0.3 MiB for a seed, 1 MiB for
    a source the guard rewrites)."""
    data = spec.pop("code", None)
    if type(data) is not bytes or spec.get("code_python") != sys.hexversion:
        return None
    try:
        code = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    return code if type(code) is types.CodeType and code.co_filename == ENV_FILENAME else None


def load_class(
    source: str, class_name: str, allowed: frozenset[str], guarded: bool, report: Any = None, code: Any = None
) -> type:
    """The class ``class_name`` of ``source``, run as module ``spade_env``: with the guard's
    builtins and compile when ``guarded`` (``code``: the guard's code for ``source`` compiled
    already, see :func:`sent_code`), else with the real builtins and the library as it is."""
    module = types.ModuleType("spade_env")
    module.__file__ = ENV_FILENAME
    module.__dict__["__builtins__"] = make_builtins(allowed) if guarded else builtins.__dict__
    linecache.cache[ENV_FILENAME] = (len(source), None, source.splitlines(True), ENV_FILENAME)
    sys.modules["spade_env"] = module
    if report is not None:
        report.mark("builtins")
    if guarded:
        # This process runs only this environment: close the library's string paths (the
        # zygote did before it forked; then a no-op).
        disarm()
        if code is None:
            code = compile_guarded(source, ENV_FILENAME)
    else:
        rearm()
        code = compile(source, ENV_FILENAME, "exec")
    if report is not None:
        report.mark("compile")
    exec(code, module.__dict__)  # noqa: S102 - untrusted code, inside the hardened worker
    cls = module.__dict__.get(class_name)
    if not isinstance(cls, type):
        raise NameError(f"class {class_name!r} is not defined by the source")
    return cls


class CpuBudget:
    """Per-request CPU-time limit without a syscall per request.

    RLIMIT_CPU's soft limit sends SIGXCPU once the worker's *total* CPU time reaches it.
    The loop only counts requests; the handler decides: if the request running now is the
    same one that was running at the previous SIGXCPU, it has used at least ``seconds``
    of CPU and is stopped; otherwise the limit moves ``seconds`` further and it goes on.
    A request therefore gets between ``seconds`` and ``2 * seconds`` of CPU time.

    The hard limit (``hard``, the worker's lifetime CPU cap set by
    :func:`~spade_sandbox.hardening.apply_rlimits`) is never raised: the soft limit moves
    up to it at most, and the kernel kills the worker there.
    """

    def __init__(self, seconds: int, hard: int | None = None) -> None:
        self.seconds = seconds
        self.soft = seconds
        self.hard = resource.getrlimit(resource.RLIMIT_CPU)[1] if hard is None else hard
        self.request = 0
        self.flagged = -1

    def on_sigxcpu(self, signum: int, frame: Any) -> None:
        if self.flagged == self.request:
            raise CpuLimitExceeded("CPU-time limit exceeded")
        self.flagged = self.request
        soft = int(time.process_time()) + self.seconds
        if self.hard != resource.RLIM_INFINITY and soft >= self.hard:
            if self.soft >= self.hard:
                raise CpuLimitExceeded("CPU-time limit exceeded (the worker's lifetime CPU limit is spent)")
            soft = self.hard
        self.soft = soft
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (soft, self.hard))
        except (OSError, ValueError):
            raise CpuLimitExceeded("CPU-time limit exceeded") from None


def method_of(msg: list[Any] | None) -> str:
    """The environment method a request calls (``None``: a binary step request)."""
    if msg is None:
        return "step"
    op = msg[0] if msg else None
    if op == "call" and len(msg) > 2 and isinstance(msg[2], str):
        return msg[2]
    return {"reset": "reset", "reset_many": "reset"}.get(op, "step") if isinstance(op, str) else "step"


def invalid_text_reply(exc: UnicodeEncodeError, method: str) -> list[Any]:
    """The contract error for a result holding text that is not valid Unicode (a lone
    surrogate: Python strings may hold one, UTF-8 and therefore the wire cannot)."""
    where = f"a lone surrogate {exc.object[exc.start]!r} at index {exc.start}" if isinstance(exc.object, str) else "invalid text"
    return protocol.error_reply(
        "contract", f"{method}() returned text that is not valid Unicode ({where}); return str without lone surrogates", None
    ) + [method]


def _encode_without_invalid_text(pack: Any, msg: list[Any] | None, reply: Any, exc: UnicodeEncodeError) -> bytes:
    """Encode ``reply``, which failed to encode because some text in it holds a lone
    surrogate. In a batch only the results that hold one become their contract error (the
    other instances' results go back as they are); anything else becomes one contract
    error for the request."""
    op = msg[0] if msg else None
    fixed: Any = None
    try:
        if op == "step_cols" and type(reply) is list and len(reply) == 7:
            obs, rewards, terms, truncs, infos, errors = (list(column) for column in reply[1:])
            for n in range(len(obs)):
                try:
                    pack([obs[n], infos[n]])
                except UnicodeEncodeError as item_exc:
                    obs[n], infos[n] = "", {}
                    errors = [e for e in errors if e[0] != n] + [[n, *invalid_text_reply(item_exc, "step")]]
            errors.sort(key=_first)
            fixed = [protocol.OK, obs, rewards, terms, truncs, infos, errors]
        elif op in ("reset_many", "step_many") and type(reply) is list and len(reply) == 2 and type(reply[1]) is list:
            items = []
            for item in reply[1]:
                try:
                    pack(item)
                    items.append(item)
                except UnicodeEncodeError as item_exc:
                    items.append(invalid_text_reply(item_exc, method_of(msg)))
            fixed = [protocol.OK, items]
        if fixed is not None:
            return pack(fixed)
    except UnicodeEncodeError:  # text elsewhere in the reply (an error message...)
        pass
    return pack(invalid_text_reply(exc, method_of(msg)))


def _send_or_exit(sock: protocol.PipeChannel, reply: list[Any], code: int) -> None:
    try:
        protocol.send(sock, reply)
    except (OSError, ValueError, TypeError):
        os._exit(EXIT_PROTOCOL)
    if code:
        os._exit(code)


def run(sock: protocol.PipeChannel, hardening: dict[str, Any], seccomp_program: bytes | None, zygote_pid: int) -> None:
    """Body of a freshly forked worker; never returns.

    The worker hardens itself first (``hardening``: layer options and the refusal
    policy), and only then reads its load request — the source, class name and allowed
    modules — from its socket. A pre-forked spare therefore waits fully hardened.
    """
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGXCPU, _on_sigxcpu)
    opts = LayerOptions.from_dict(hardening["layers"])
    report = apply_layers(opts, seccomp_program, zygote_pid)
    ready_info = {
        "pid": os.getpid(),
        "layers": report.active,
        "missing": report.missing,
        "timings_us": report.timings_us,
        "c_fast_path": native.active(),
    }
    if hardening.get("require_secure", True) and not secure_enough(report.active):
        missing = ", ".join(f"{k}: {v}" for k, v in report.missing.items()) or "none"
        _send_or_exit(
            sock,
            protocol.error_reply(
                "unavailable",
                "refusing to run untrusted code: neither seccomp nor Landlock+rlimits is active "
                f"here (missing layers: {missing}); pass allow_insecure=True to override",
            ),
            EXIT_UNAVAILABLE,
        )
    try:
        spec = protocol.decode_trusted(protocol.recv_frame(sock))
    except BaseException:
        os._exit(0)  # the zygote went away before handing out this (spare) worker
    report.mark("idle")
    limit = int(spec.get("max_output_chars", 65536))
    allowed = DEFAULT_ALLOWED_MODULES | frozenset(spec.get("allowed_modules", ()))
    guarded = spec.get("guarded", True)
    try:
        code = sent_code(spec) if guarded else None
        cls = load_class(spec["source"], spec["class_name"], allowed, guarded, report, code)
    except BaseException as exc:
        try:
            reply = classify(exc, "loading the environment")
            code = EXIT_LOAD
        except WorkerFatal as fatal:
            reply, code = fatal.reply, fatal.code
        _send_or_exit(sock, reply, code)
        return
    report.mark("load")
    instances = Instances(cls, limit)
    budget = CpuBudget(opts.cpu_seconds)
    signal.signal(signal.SIGXCPU, budget.on_sigxcpu)
    # The loaded code joins the permanent generation: later collections skip it, and
    # freezing costs nothing where a full collection here cost a few hundred microseconds.
    gc.freeze()
    report.mark("gc")
    ready: list[Any] = [protocol.OK, ready_info]
    first = spec.get("first_instance")
    if type(first) is int:
        # The first instance is built before answering, so a spawn of new code costs one
        # exchange with the worker instead of two.
        try:
            ready.append(instances.new(first))
        except WorkerFatal as fatal:
            _send_or_exit(sock, fatal.reply, fatal.code)
    _send_or_exit(sock, ready, 0)
    serve(sock, instances, budget)


def serve(sock: protocol.PipeChannel, instances: Instances, budget: CpuBudget) -> None:
    """Answer requests until the channel closes; never returns.

    Written for the moment a request arrives, right after a context switch, when caches
    are cold and every Python frame and attribute lookup costs several times what it
    costs in a warm loop (docs/sandbox-security.md, "Where a round trip goes"): the loop's
    callables are bound once, a frame that arrived whole in the first ``readv`` is decoded
    straight from the buffer, and a binary ``step`` request whose result needs no
    conversion is answered here with a binary reply (:data:`protocol.STEP_MARK`).
    Everything else goes through :meth:`Instances.handle` (and msgpack) as before.

    With the C fast path (:mod:`.native`), ``serve_steps`` runs that binary-step loop in C
    and returns here, in a state the loop below continues from, for everything else."""
    reader = protocol.FrameReader(sock)
    buf = reader.buf
    view = reader.view
    readv = os.readv
    rfd = sock.rfd
    bufs = (buf,)
    size_of = protocol.HEADER.unpack_from
    request_of = protocol.STEP_REQUEST.unpack_from
    request_size = protocol.STEP_REQUEST.size
    reply_fields = protocol.STEP_REPLY.size
    mark = protocol.STEP_MARK
    decode = msgpack.unpackb
    handle = instances.handle
    step = instances.step
    live_get = instances.live.get
    limit = instances.limit
    ok = protocol.OK
    pack = protocol.new_packer().pack
    header = protocol.HEADER.pack
    reply_head = protocol.STEP_REPLY_HEAD.pack
    sendall = sock.sendall
    write = os.write
    wfd = sock.wfd
    # The C loop (native.fast.serve_steps) answers binary steps of plain results itself and
    # returns here for everything else: a frame it did not handle (``0, have``: the first
    # ``have`` bytes are in ``buf``, not counted yet), or a step it called whose result
    # (``1, result``) or exception (``2, exc``) needs the Python code below.
    fast = native.fast
    serve_steps = fast.serve_steps if fast is not None else None
    live = instances.live
    if fast is not None:
        instances.encode_columns = fast.encode_step_columns
    while True:
        stepped = 0
        try:
            if serve_steps is None:
                have = readv(rfd, bufs)
            else:
                stepped, have = serve_steps(rfd, wfd, buf, live, limit, budget)
            if stepped:
                msg = None
            elif have >= request_size and buf[4] == mark and have == (head := request_of(buf))[0] + 4:
                iid = head[2]  # a whole binary step request in one read (the usual case)
                action = str(view[request_size:have], "utf-8")
                msg = None
            elif have > 4 and have == size_of(buf)[0] + 4 and buf[4] != mark:
                msg = decode(view[4:have], strict_map_key=False)
            else:
                payload = reader.read_rest(have)
                if payload[0] == mark:
                    iid, action = protocol.decode_step_request(payload)
                    msg = None
                else:
                    msg = protocol.decode_trusted(payload)
        except protocol.ChannelClosed:
            os._exit(0)
        except BaseException:
            os._exit(EXIT_PROTOCOL)
        if not stepped:
            budget.request += 1
        data = None
        try:
            if msg is not None:
                reply = handle(msg)
            else:
                inst: Any = live_get(iid) if not stepped else None
                if inst is None and not stepped:
                    reply = step(iid, action)  # its error reply
                else:
                    # Instances.step, inline; a result it would pass unconverted goes back
                    # as a binary reply, everything else as msgpack from wire_step/classify.
                    reply = None
                    raised: Any = None
                    if stepped == 1:
                        r = have
                    elif stepped == 2:
                        raised = have
                    else:
                        try:
                            r = inst.step(action)
                        except BaseException as exc:
                            raised = exc
                    if raised is not None:
                        reply = classify(raised, "step()")
                    else:
                        if type(r) is tuple and len(r) == 5:
                            o, rw, te, tr, inf = r
                            if (
                                type(o) is str
                                and len(o) <= limit
                                and type(rw) is float
                                and rw - rw == 0.0  # finite: inf - inf and nan - nan are nan
                                and (te is True or te is False)
                                and (tr is True or tr is False)
                                and type(inf) is dict
                                and not inf
                            ):
                                try:
                                    text = o.encode("utf-8")
                                except UnicodeEncodeError as exc:  # a lone surrogate
                                    reply = invalid_text_reply(exc, "step")
                                else:
                                    data = reply_head(len(text) + reply_fields, mark, te | tr << 1, rw) + text
                        if data is None and reply is None:
                            try:
                                reply = [ok, wire_step(r, limit)]
                            except BaseException as exc:
                                reply = classify(exc, "step()")
            code = 0
        except WorkerFatal as fatal:
            reply, code, data = fatal.reply, fatal.code, None
        except BaseException:  # a bug or a hostile object; the worker cannot go on safely
            os._exit(EXIT_PROTOCOL)
        try:
            if data is None:
                # A bytes reply is an already encoded payload (Instances.encode_columns).
                try:
                    encoded = reply if type(reply) is bytes else pack(reply)
                except UnicodeEncodeError as exc:  # text msgpack cannot carry: lone surrogates
                    encoded = _encode_without_invalid_text(pack, msg, reply, exc)
                data = header(len(encoded)) + encoded
            # A blocking pipe takes the whole frame unless a signal cuts the write short.
            sent = write(wfd, data)
            if sent != len(data):
                sendall(memoryview(data)[sent:])
        except MemoryError:
            os._exit(EXIT_MEMORY)
        except BaseException:
            os._exit(EXIT_PROTOCOL)
        if code:
            os._exit(code)
