"""The zygote: a warm process that forks one worker per environment code version.

Started by the pool as ``python -I -m spade_sandbox.zygote FD`` with an empty environment,
where FD is its end of the control socket. It pre-imports the allowed modules, builds the
seccomp filter once, freezes the heap (so forked workers share it copy-on-write) and then
serves requests on the control socket:

* ``["spawn", spec]`` — fork a worker for ``spec`` (source, class name, allowed modules,
  layer options); reply ``["ok", pid]`` with two descriptors attached: the pool's end of
  the worker's socketpair and a pidfd of the worker;
* ``["status", pid]`` — wait for a worker that has ended; reply its raw wait status;
* ``["import", [names]]`` — pre-import extra (trusted, allow-listed) modules;
* ``["exit"]`` — kill every worker and leave. EOF on the control socket means the same.

Standard library, msgpack and pyseccomp only: this is what every worker inherits.
"""

from __future__ import annotations

import gc
import os
import signal
import socket
import sys
from typing import Any

from . import protocol
from .allowlist import DEFAULT_ALLOWED_MODULES
from .guard import module_wrapper, preimport
from .seccomp_policy import build_filter

#: Statuses of reaped workers, kept until the pool asks (bounded).
_MAX_STATUSES = 8192


class Zygote:
    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.children: set[int] = set()
        self.statuses: dict[int, int] = {}
        self.seccomp_filter = build_filter()
        self.imported: set[str] = set()

    # --- children -------------------------------------------------------------------
    def reap(self, *_: Any) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.children.discard(pid)
            if len(self.statuses) >= _MAX_STATUSES:
                self.statuses.pop(next(iter(self.statuses)))
            self.statuses[pid] = status

    def status(self, pid: int) -> int | None:
        if pid in self.statuses:
            return self.statuses.pop(pid)
        if pid not in self.children:
            return None
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:  # reaped by the handler meanwhile
            return self.statuses.pop(pid, None)
        self.children.discard(pid)
        return status

    def kill_all(self) -> None:
        for pid in list(self.children):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    # --- requests -------------------------------------------------------------------
    def preimport(self, names: list[str]) -> list[str]:
        todo = [n for n in names if n not in self.imported]
        failed = preimport(todo)
        self.imported.update(n for n in todo if n not in failed)
        return failed

    def spawn(self, spec: dict[str, Any]) -> None:
        failed = self.preimport(list(spec.get("allowed_modules", ())))
        if failed:
            protocol.send(
                self.control,
                protocol.error_reply("unavailable", f"allowed module(s) cannot be imported: {', '.join(failed)}"),
            )
            return
        parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        me = os.getpid()
        pid = os.fork()
        if pid == 0:  # the worker
            try:
                self.control.close()
                parent_end.close()
                keep = child_end.fileno()
                os.closerange(3, keep)
                os.closerange(keep + 1, 65536)
                from .worker import run

                run(child_end, spec, self.seccomp_filter, me)
            finally:
                os._exit(protocol_exit())
        self.children.add(pid)
        child_end.close()
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            pidfd = -1
        try:
            fds = [parent_end.fileno()] + ([pidfd] if pidfd >= 0 else [])
            socket.send_fds(self.control, [protocol.encode([protocol.OK, pid])], fds)
        finally:
            parent_end.close()
            if pidfd >= 0:
                os.close(pidfd)

    def serve(self) -> None:
        signal.signal(signal.SIGCHLD, self.reap)
        while True:
            try:
                msg = protocol.decode_trusted(protocol.recv_frame(self.control))
            except (protocol.ChannelClosed, OSError):
                break
            op = msg[0]
            if op == "spawn":
                self.spawn(msg[1])
            elif op == "status":
                protocol.send(self.control, [protocol.OK, self.status(int(msg[1]))])
            elif op == "import":
                protocol.send(self.control, [protocol.OK, self.preimport(list(msg[1]))])
            elif op == "ping":
                protocol.send(self.control, [protocol.OK, {"pid": os.getpid(), "children": len(self.children)}])
            elif op == "exit":
                break
            else:
                protocol.send(self.control, protocol.error_reply("request", f"unknown zygote request {op!r}"))
        self.kill_all()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for pid in list(self.children):
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def protocol_exit() -> int:
    from .worker import EXIT_PROTOCOL

    return EXIT_PROTOCOL


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    zygote = Zygote(control)
    zygote.preimport(sorted(DEFAULT_ALLOWED_MODULES))
    # Worker-side modules and wrappers are built once here, then shared copy-on-write.
    import traceback  # noqa: F401

    from . import worker  # noqa: F401

    for name in sorted(DEFAULT_ALLOWED_MODULES):
        if name in sys.modules:
            module_wrapper(name, DEFAULT_ALLOWED_MODULES)
    gc.collect()
    gc.freeze()
    protocol.send(control, [protocol.OK, {"pid": os.getpid(), "seccomp": zygote.seccomp_filter is not None}])
    zygote.serve()


if __name__ == "__main__":
    main()
