"""The worker: one process per environment code version, holding many instances.

Runs in a child forked by the zygote. :func:`run` applies the OS layers, loads the
source with the runtime guard, reports ready, then answers requests until its channel
closes: :class:`~spade_sandbox.worker_instances.Instances` holds the instances and answers
each request; every value sent back is converted to plain msgpack types and every error
classified by :mod:`spade_sandbox.worker_replies`; the pool checks them again (the worker
is not trusted).

Exit codes tell the zygote (and so the pool) why a worker ended when it could not say so
itself: see :data:`EXIT_CODES`.

Imported by the zygote: standard library and msgpack only.
"""

from __future__ import annotations

import builtins
import gc
import linecache
import marshal
import os
import resource
import signal
import sys
import time
import types
from operator import itemgetter
from typing import Any

import msgpack

from . import native, protocol
from .allowlist import DEFAULT_ALLOWED_MODULES
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
from .worker_instances import Instances
from .worker_replies import CpuLimitExceeded, classify, wire_step

_first = itemgetter(0)


def _on_sigxcpu(signum: int, frame: Any) -> None:
    raise CpuLimitExceeded("CPU-time limit exceeded")


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
