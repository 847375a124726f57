"""The pool's side of the zygote: starting it (:class:`ZygoteProcess`, with the command
:func:`zygote_command` builds), asking it for workers and for how a worker ended, and the
error that ending means (:func:`describe_status`). The zygote itself is
:mod:`spade_sandbox.zygote`."""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Any

from . import native, protocol
from .errors import (
    SandboxCrash,
    SandboxError,
    SandboxMemoryError,
    SandboxPolicyViolation,
    SandboxTimeout,
    SandboxUnavailable,
)

#: The zygote's entry: extend the module path (argv[1]), then run spade_sandbox.zygote.
_ZYGOTE_BOOT = (
    "import sys; sys.path.extend(p for p in sys.argv.pop(1).split({sep!r}) if p not in sys.path); "
    "from spade_sandbox.zygote import main; main()"
)


def zygote_path() -> list[str]:
    """Where the zygote finds its modules: this interpreter's module path, less the script
    directory or working directory at its head (which ``-I`` leaves out too)."""
    entries = sys.path if sys.flags.safe_path else sys.path[1:]
    return [p for p in entries if p and os.path.isabs(p) and os.path.isdir(p)]


def zygote_command() -> list[str]:
    """``python -I -S -c BOOT PATHS``: isolated mode and no ``site``. Processing ``site``
    (its .pth files, sitecustomize) costs a zygote more than its own module imports; the
    directories it would add are handed over explicitly instead."""
    boot = _ZYGOTE_BOOT.format(sep=os.pathsep)
    return [sys.executable, "-I", "-S", "-c", boot, os.pathsep.join(zygote_path())]


class ZygoteProcess:
    """The warm zygote, started as ``command_prefix + zygote_command() + [FD]``.

    The constructor only starts the process: the zygote's boot (mostly pre-importing the
    allowed modules, ~0.08 s) runs while the caller goes on, and its hello is read by the
    first request (:meth:`ready`). A zygote that failed to start raises
    :class:`SandboxUnavailable` there.
    """

    def __init__(
        self,
        command_prefix: Sequence[str] = (),
        start_timeout_s: float = 30.0,
        spare: bool = True,
        cgroups: bool = True,
    ) -> None:
        self.lock = threading.Lock()
        self.start_timeout_s = start_timeout_s
        self._hello: list[Any] | None = None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock = ours
        fd = str(theirs.fileno())
        # An outer jail may need the descriptor's number (nsjail --pass_fd {fd}).
        prefix = [part.replace("{fd}", fd) for part in command_prefix]
        self.command = [*prefix, *zygote_command(), fd]
        if not spare:
            self.command.append("--no-spare")
        if not cgroups:
            self.command.append("--no-cgroups")
        try:
            self.proc = subprocess.Popen(
                self.command,
                # Nothing of this environment but the step path's choice (native.py).
                env={native.DISABLE_VARIABLE: "1"} if native.disabled else {},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            ours.close()
            raise SandboxUnavailable(f"cannot start the sandbox zygote ({self.command[0]}): {exc}") from None
        finally:
            theirs.close()

    def ready(self) -> list[Any]:
        """The zygote's hello (``[OK, {"pid", "seccomp"}]``), waiting for it the first time."""
        if self._hello is None:
            with self.lock:
                self._await_hello()
        assert self._hello is not None
        return self._hello

    def _await_hello(self) -> None:
        """Read the hello if not read yet (called with ``lock`` held)."""
        if self._hello is not None:
            return
        self.sock.settimeout(self.start_timeout_s)
        try:
            hello = protocol.decode_trusted(protocol.recv_frame(self.sock, 65536))
        except (OSError, protocol.ChannelClosed, protocol.FrameTooLarge) as exc:
            # Not alive any more either way, so the backend starts a new one next time.
            self.proc.kill()
            self.proc.wait()
            raise SandboxUnavailable(
                f"the sandbox zygote failed to start ({exc}); run `{shlex.join(self.command[:-1])} 3 3<&-` to see why"
            ) from None
        self.sock.settimeout(None)
        if not (isinstance(hello, list) and len(hello) == 2 and isinstance(hello[1], dict)):
            self.proc.kill()
            self.proc.wait()
            raise SandboxUnavailable(f"the sandbox zygote sent an unexpected hello: {hello!r}")
        self._hello = hello

    @property
    def pid(self) -> int:
        hello = self.ready()
        return int(hello[1]["pid"]) if hello[0] == protocol.OK else self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def spawn(self, spec: dict[str, Any]) -> tuple[int, protocol.PipeChannel, int, dict[str, Any]]:
        """Fork a worker; returns (pid, the pool's end of its pipe channel, pidfd or -1,
        extras such as ``{"cgroup": True}``)."""
        with self.lock:
            self._await_hello()
            protocol.send(self.sock, ["spawn", spec])
            data, fds, _flags, _addr = socket.recv_fds(self.sock, 65536, 3)
            if not data:
                for fd in fds:
                    os.close(fd)
                raise SandboxUnavailable("the sandbox zygote died")
            (size,) = protocol.HEADER.unpack_from(data)
            reply = protocol.decode_trusted(data[protocol.HEADER.size : protocol.HEADER.size + size])
        if reply[0] != protocol.OK or len(fds) < 2:
            for fd in fds:
                os.close(fd)
            raise SandboxUnavailable(reply[2] if reply[0] != protocol.OK else "the zygote sent no worker channel")
        channel = protocol.PipeChannel(fds[0], fds[1])
        pidfd = fds[2] if len(fds) > 2 else -1
        extras = reply[2] if len(reply) > 2 and isinstance(reply[2], dict) else {}
        return int(reply[1]), channel, pidfd, extras

    def wait_status(self, pid: int) -> tuple[int | None, bool, bool]:
        """(raw wait status or None if unknown, killed by the cgroup OOM killer, killed by
        the kernel at its hard CPU limit)."""
        status, oom, cpu_hit, _ = self.end_report(pid)
        return status, oom, cpu_hit

    def end_report(self, pid: int) -> tuple[int | None, bool, bool, str]:
        """:meth:`wait_status` and, last, what the worker's CPU time was against its hard
        limit (``"1.62 s of CPU time, its hard limit 2 s"``; "" unknown): the evidence an
        error names when a SIGKILL came from neither the sandbox nor that limit."""
        with self.lock:
            try:
                self._await_hello()
                protocol.send(self.sock, ["status", pid])
                reply = protocol.decode_trusted(protocol.recv_frame(self.sock))
            except (OSError, protocol.ChannelClosed, SandboxUnavailable):
                return None, False, False, ""
        if reply[0] != protocol.OK or not isinstance(reply[1], list):
            return None, False, False, ""
        found = reply[1]
        cpu = ""
        if len(found) > 4 and isinstance(found[3], (int, float)) and found[3] >= 0 and found[4]:
            cpu = f"{float(found[3]):.2f} s of CPU time, its hard limit {int(found[4])} s"
        return int(found[0]), bool(found[1]), len(found) > 2 and bool(found[2]), cpu

    def close(self, wait: bool = True) -> None:
        """Ask the zygote to kill its workers and leave; ``wait=False`` does not wait for it
        to finish (at interpreter exit: it cleans up on its own, EOF meaning the same)."""
        try:
            with self.lock:
                protocol.send(self.sock, ["exit"])
        except OSError:
            pass
        self.sock.close()
        if not wait:
            return
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_KIND_ERRORS: dict[str, type[SandboxError]] = {
    "timeout": SandboxTimeout,
    "memory": SandboxMemoryError,
    "policy": SandboxPolicyViolation,
    "crash": SandboxCrash,
    "unavailable": SandboxUnavailable,
}


def describe_status(
    status: int | None, oom_killed: bool = False, cpu_limit_hit: bool = False
) -> tuple[type[SandboxError], str]:
    """Error class and wording for a worker's raw wait status."""
    if oom_killed:
        return SandboxMemoryError, "exceeded its cgroup memory limit (killed by the kernel)"
    if cpu_limit_hit:
        return SandboxTimeout, "exceeded its CPU-time limit (killed by the kernel at its hard limit)"
    if status is None:
        return SandboxCrash, "ended (exit status unknown)"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGSYS:
            return SandboxPolicyViolation, "was killed by the syscall filter (forbidden system call)"
        if sig == signal.SIGXCPU:
            return SandboxTimeout, "exceeded its CPU-time limit"
        return SandboxCrash, f"died from signal {signal.Signals(sig).name}"
    code = os.WEXITSTATUS(status)
    if code in protocol.EXIT_CODES:
        kind, why = protocol.EXIT_CODES[code]
        return _KIND_ERRORS.get(kind, SandboxCrash), why
    if code == 0:
        # Workers never exit 0 on their own while a request is open: the environment ended
        # the process itself (sys.exit, os._exit) instead of answering.
        return SandboxCrash, "ended its own process (exit code 0) instead of answering"
    return SandboxCrash, f"exited with code {code}"
