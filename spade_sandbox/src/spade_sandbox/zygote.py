"""The zygote: a warm process that forks one worker per environment code version.

Started by the pool (:func:`spade_sandbox.zygote_process.zygote_command`: ``python -I -S`` with
the module path passed explicitly, then :func:`main` with ``FD [--no-spare]``) with an empty
environment, where FD is its end of the control socket. Unless ``--no-spare`` is given it
keeps one *spare* worker forked and hardened ahead of time, so a spawn only has to hand the
spare its source (the spare is used only if it was forked with the same layer options and
every module the new code may import). It pre-imports the allowed modules, builds the
seccomp filter once, disarms the library (:func:`spade_sandbox.guard.disarm`), freezes the
heap (so forked workers share it copy-on-write) and then serves requests on the control
socket:

* ``["spawn", spec]`` — fork a worker for ``spec`` (source, class name, allowed modules,
  layer options, and the code the pool compiled when it sent one); reply ``["ok", pid]``
  with descriptors attached: the pool's end of the worker's pipe channel (read end, write
  end) and a pidfd of the worker;
* ``["status", pid]`` — wait for a worker that has ended; reply ``[raw wait status,
  oom_killed, cpu_limit_hit, cpu_seconds, cpu_cap]`` (``oom_killed``: its cgroup's OOM killer
  acted; ``cpu_limit_hit``: the kernel killed it at its hard CPU limit; ``cpu_seconds``: the
  CPU time the kernel charged it against that limit, -1.0 unknown; ``cpu_cap``: that hard
  limit in seconds, 0 unknown);
* ``["import", [names]]`` — pre-import extra (trusted, allow-listed) modules;
* ``["exit"]`` — kill every worker and leave. EOF on the control socket means the same.

Standard library, msgpack and pyseccomp only: this is what every worker inherits.
"""

from __future__ import annotations

import gc
import os
import select
import signal
import socket
import sys
import time
from typing import Any

from . import hardening, protocol
from .allowlist import DEFAULT_ALLOWED_MODULES
from .cgroups import WorkerCgroups
from .guard import compile_guarded, disarm, make_builtins, module_wrapper, preimport, rearm
from .seccomp_policy import compile_program

#: A spare is forked after the control socket has been quiet this long.
SPARE_QUIET_MS = 5
#: Statuses of reaped workers, kept until the pool asks (bounded).
_MAX_STATUSES = 8192


def _hardening_key(hardening: dict[str, Any]) -> bytes:
    return protocol.encode([sorted(hardening["layers"].items()), hardening["require_secure"]])


class Spare:
    """A forked worker (hardening itself, or already waiting) not yet handed to the pool."""

    def __init__(
        self, pid: int, sock: protocol.PipeChannel, pidfd: int, key: bytes, modules: frozenset[str]
    ) -> None:
        self.pid = pid
        self.sock = sock
        self.pidfd = pidfd
        self.key = key
        self.modules = modules
        self.cgroup = False

    def release(self) -> None:
        """Close the zygote's copies of the descriptors (after handing them over)."""
        self.sock.close()
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1

    def discard(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.release()


def outer_pid(pid: int | str = "self") -> int:
    """The pid of a process (this one by default) as the host's ``/proc`` names it: inside
    the zygote's PID namespace ``os.getpid()`` is 1 and its children count from 2, while
    cgroup names, the hello and the pool speak of host pids."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("NSpid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return os.getpid() if pid == "self" else int(pid)


def _pid_of_pidfd(pidfd: int) -> int | None:
    """The host pid of the process behind ``pidfd`` (its fdinfo, read through the host's
    ``/proc``, names it in that procfs's namespace)."""
    try:
        with open(f"/proc/self/fdinfo/{pidfd}") as info:
            for line in info:
                if line.startswith("Pid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


class Zygote:
    def __init__(self, control: socket.socket, keep_spare: bool = True, use_cgroups: bool = True) -> None:
        self.keep_spare = keep_spare
        self.host_pid = outer_pid()
        self.cgroups = WorkerCgroups.create(f"spade-zygote-{self.host_pid}") if use_cgroups else None
        #: pid (as this zygote sees it) -> the host pid naming its cgroup.
        self.cgroup_names: dict[int, int] = {}
        self.spare: Spare | None = None
        #: Layer options of the spare to fork once the control socket goes quiet.
        self.spare_hardening: dict[str, Any] | None = None
        self.control = control
        self.children: set[int] = set()
        #: pid -> the worker's hard CPU limit in seconds (its lifetime cap).
        self.cpu_caps: dict[int, int] = {}
        #: pid -> (raw wait status, killed by the cgroup's OOM killer, killed by the kernel
        #: at its hard CPU limit, CPU seconds it used or -1.0, its hard CPU limit or 0)
        self.statuses: dict[int, tuple[int, bool, bool, float, int]] = {}
        self.seccomp_program = compile_program()
        self.imported: set[str] = set()
        #: Allow sets whose module wrappers and builtins are built here (see prepare_guard).
        self.prepared: set[frozenset[str]] = set()

    # --- children -------------------------------------------------------------------
    def reap(self, *_: Any) -> None:
        while self.children:
            try:
                # WNOWAIT: the ended worker stays a zombie until its CPU clock is read
                found = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if found is None:
                return
            self.collect(found.si_pid)

    def collect(self, pid: int) -> None:
        """Read an ended child's charged CPU time, then reap it (:meth:`ended`)."""
        charged = charged_cpu_seconds(pid)
        try:
            _, status, usage = os.wait4(pid, 0)
        except ChildProcessError:  # reaped meanwhile (the handler, or status())
            return
        self.ended(pid, status, usage, charged)

    def ended(self, pid: int, status: int, usage: Any, charged: float | None) -> None:
        self.children.discard(pid)
        cap = self.cpu_caps.pop(pid, None)
        # SIGKILL with the CPU time at the hard limit: the kernel's RLIMIT_CPU kill. The
        # evidence is the time the limit check itself counts, the process's profiling CPU
        # clock (``charged``, read while it was a zombie). The rusage times are rescaled to
        # the scheduler's exact runtime and read short of that clock under load (a few
        # percent here), so they are only the fallback, with a margin, when the clock could
        # not be read.
        if charged is not None:
            used, hit_at = charged, (cap or 0) - 0.005
        else:
            used, hit_at = usage.ru_utime + usage.ru_stime, 0.9 * (cap or 0) - 0.05
        cpu_hit = (
            cap is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL and used >= hit_at
        )
        oom = False
        name = self.cgroup_names.pop(pid, pid)
        if self.cgroups is not None:
            oom = self.cgroups.oom_killed(name)
            self.cgroups.remove(name)
        if len(self.statuses) >= _MAX_STATUSES:
            self.statuses.pop(next(iter(self.statuses)))
        self.statuses[pid] = (status, oom, cpu_hit, round(used, 3), cap or 0)

    def status(self, pid: int) -> list[Any] | None:
        """``[raw wait status, oom_killed, cpu_limit_hit, cpu_seconds, cpu_cap]`` of an ended
        worker (waiting for it if needed; ``cpu_seconds`` -1.0 and ``cpu_cap`` 0 unknown)."""
        if pid not in self.statuses and pid in self.children:
            try:
                os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
            except ChildProcessError:  # reaped by the handler meanwhile
                pass
            else:
                self.collect(pid)
        found = self.statuses.pop(pid, None)
        return list(found) if found is not None else None

    def kill_all(self) -> None:
        for pid in list(self.children):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    # --- requests -------------------------------------------------------------------
    def preimport(self, names: list[str]) -> list[str]:
        todo = [n for n in names if n not in self.imported]
        if not todo:
            return []
        # Trusted modules import with the library as it is, as they would anywhere; the
        # workers forked afterwards are disarmed again.
        disarmed = rearm()
        try:
            failed = preimport(todo)
        finally:
            if disarmed:
                disarm()
        self.imported.update(n for n in todo if n not in failed)
        # Newly imported objects join the frozen heap, so that workers' garbage
        # collections never write to (and copy) their pages. (During start-up the
        # collector is off and main() freezes once at the end.)
        if gc.isenabled():
            gc.collect()
            gc.freeze()
        return failed

    def prepare_guard(self, extra: list[str]) -> None:
        """Build the module wrappers and builtins of the allow set ``extra`` widens once,
        here, before forking: its workers share them instead of each building its own (a
        worker of the games domain's set kept 2.6 MiB more private memory building them)."""
        allowed = DEFAULT_ALLOWED_MODULES | frozenset(extra)
        if allowed in self.prepared:
            return
        for name in sorted(allowed):
            real = name[:-2] if name.endswith(".*") else name
            if real in sys.modules:
                module_wrapper(real, allowed)
        make_builtins(allowed)
        self.prepared.add(allowed)
        if gc.isenabled():
            gc.collect()
            gc.freeze()

    def fork_worker(self, hardening: dict[str, Any]) -> Spare:
        """Fork a worker that hardens itself and then waits for its load request."""
        parent_end, child_end = protocol.pipe_channels()
        me = os.getpid()
        pid = os.fork()
        if pid == 0:  # the worker
            try:
                self.control.close()
                parent_end.close()
                low, high = sorted((child_end.rfd, child_end.wfd))
                os.closerange(3, low)
                os.closerange(low + 1, high)
                os.closerange(high + 1, 65536)
                from .worker import run

                run(child_end, hardening, self.seccomp_program, me)
            finally:
                os._exit(protocol_exit())
        self.children.add(pid)
        layers = hardening["layers"]
        self.cpu_caps[pid] = max(int(layers["worker_cpu_seconds"]), int(layers["cpu_seconds"]))
        child_end.close()
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            pidfd = -1
        # Attached before the worker gets its load request, so before any untrusted code.
        memory = int(layers["memory_mb"]) * 1024 * 1024
        name = (_pid_of_pidfd(pidfd) if pidfd >= 0 else None) or pid
        self.cgroup_names[pid] = name
        in_cgroup = self.cgroups is not None and self.cgroups.attach(pid, memory, name)
        spare = Spare(pid, parent_end, pidfd, _hardening_key(hardening), frozenset(self.imported))
        spare.cgroup = in_cgroup
        return spare

    def spawn(self, spec: dict[str, Any]) -> None:
        allowed = list(spec.get("allowed_modules", ()))
        failed = self.preimport(allowed)
        if failed:
            protocol.send(
                self.control,
                protocol.error_reply("unavailable", f"allowed module(s) cannot be imported: {', '.join(failed)}"),
            )
            return
        if allowed:
            self.prepare_guard(allowed)
        hardening = {"layers": spec.get("layers", {}), "require_secure": spec.get("require_secure", True)}
        key = _hardening_key(hardening)
        worker = self.spare
        self.spare = None
        if worker is not None and (worker.key != key or not set(allowed) <= worker.modules):
            worker.discard()
            worker = None
        if worker is None:
            worker = self.fork_worker(hardening)
        load = {k: spec[k] for k in ("source", "class_name", "allowed_modules", "guarded", "max_output_chars", "first_instance", "code", "code_python") if k in spec}
        try:
            protocol.send(worker.sock, load)
        except OSError:
            pass  # the worker already died; the pool reads why from its socket
        try:
            fds = [worker.sock.rfd, worker.sock.wfd] + ([worker.pidfd] if worker.pidfd >= 0 else [])
            reply = [protocol.OK, worker.pid, {"cgroup": worker.cgroup}]
            socket.send_fds(self.control, [protocol.encode(reply)], fds)
        finally:
            worker.release()
        self.spare_hardening = hardening if self.keep_spare else None

    def serve(self) -> None:
        signal.signal(signal.SIGCHLD, self.reap)
        quiet = select.poll()
        quiet.register(self.control.fileno(), select.POLLIN)
        while True:
            if self.spare_hardening is not None and self.spare is None and not quiet.poll(SPARE_QUIET_MS):
                # Fork the next spare only when no request is waiting, so that its fork and
                # hardening do not compete with the worker that was just handed out.
                self.spare = self.fork_worker(self.spare_hardening)
                self.spare_hardening = None
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
                protocol.send(self.control, [protocol.OK, {"pid": self.host_pid, "children": len(self.children)}])
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
        if self.cgroups is not None:
            self.cgroups.close()


#: A small environment of our own in the reference style (module-level patterns, a seeded
#: ``random.Random``, ``\\boxed{...}`` commands, f-strings and %-formatting, a property, a
#: caught ``ValueError``), which :func:`warm_up` loads and plays in the zygote.
WARM_UP_SOURCE = r'''
import random
import re

_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_NUMBER = re.compile(r"^[+-]?\d+$")


def _command(action):
    if not isinstance(action, str):
        return None
    found = _BOXED.findall(action)
    return " ".join(found[-1].split()) if found else None


class WarmUpEnv:
    """Find a hidden number with higher/lower hints."""

    LOW, HIGH = 1, 64

    def __init__(self, max_turns=6):
        self.max_turns = max_turns
        self.secret = None
        self.turn = 0
        self.history = []

    @property
    def grammar(self):
        return "Answer \\boxed{guess N} for N in [%d, %d]." % (self.LOW, self.HIGH)

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.secret = rng.randint(self.LOW, self.HIGH)
        self.turn, self.history = 0, []
        return f"I am thinking of a number. {self.grammar}", {"turn": self.turn}

    def step(self, action):
        self.turn += 1
        command = _command(action) or ""
        verb, _, rest = command.partition(" ")
        try:
            if verb != "guess" or not _NUMBER.match(rest):
                raise ValueError(f"not a command: {command!r}")
            guess = int(rest)
        except ValueError as exc:
            return str(exc), 0.0, False, self.turn >= self.max_turns, {"valid": False}
        self.history.append(guess)
        found = guess == self.secret
        hint = "right" if found else ("higher" if guess < self.secret else "lower")
        info = {"valid": True, "seen": sorted(set(self.history)), "hints": {h: h == hint for h in ("higher", "lower")}}
        return f"{guess}: {hint}", float(found), found, self.turn >= self.max_turns, info

    def solution(self):
        return [f"\\boxed{{guess {self.secret}}}"]
'''


def warm_up() -> None:
    """Load and play :data:`WARM_UP_SOURCE` the way a worker loads and plays untrusted code
    (the guard's compile, its builtins), before the heap is frozen. The first load and
    episode of a worker otherwise build, each in its own copy, what is the same in every
    worker: the interpreter's specialised bytecode of the library and guard code on that
    path, interned names, the ``re`` and ``random`` machinery's first-use state. Made here
    once, those pages are shared copy-on-write instead (bench_serve --memory has the
    figures). Trusted code only (ours); nothing of it is reachable from a worker."""
    namespace: dict[str, Any] = {"__builtins__": make_builtins(DEFAULT_ALLOWED_MODULES), "__name__": "spade_warm_up"}
    exec(compile_guarded(WARM_UP_SOURCE, "<warm-up>"), namespace)  # noqa: S102 - our own source
    env = namespace["WarmUpEnv"]()
    for seed in range(4):
        env.reset(seed=seed)
        for action in ("\\boxed{guess 32}", "no command", "\\boxed{guess x}", *env.solution()):
            env.step(action)
    namespace.clear()


def charged_cpu_seconds(pid: int) -> float | None:
    """The CPU time the kernel charges child ``pid`` against RLIMIT_CPU: its process
    profiling clock (user + system time as the limit check samples them; Linux's clock id
    ``(~pid << 3) | CPUCLOCK_PROF``), readable until the child is reaped; None when it
    cannot be read."""
    try:
        return time.clock_gettime((~pid << 3) | 0)
    except (OSError, OverflowError, ValueError):
        return None


def protocol_exit() -> int:
    from .worker import EXIT_PROTOCOL

    return EXIT_PROTOCOL


def main() -> None:
    # Start-up allocates many objects and frees few: collecting during the imports is
    # wasted work. A freeze at the end moves everything to the permanent generation.
    gc.disable()
    # Never the caller's working directory (workers inherit it until they pivot).
    os.chdir("/")
    # First of all (one small fork, before the imports): the PID namespace the workers are
    # born in. The process the pool started only waits for the real zygote.
    child = hardening.enter_pid_namespace()
    if child:
        os.close(int(sys.argv[1]))  # the pool must see EOF when the zygote itself ends
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        while True:
            try:
                _, status = os.waitpid(child, 0)
                break
            except ChildProcessError:
                os._exit(protocol.EXIT_PROTOCOL)
            except InterruptedError:
                continue
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    control = socket.socket(fileno=int(sys.argv[1]))
    flags = sys.argv[2:]
    zygote = Zygote(control, keep_spare="--no-spare" not in flags, use_cgroups="--no-cgroups" not in flags)
    zygote.preimport(sorted(DEFAULT_ALLOWED_MODULES))
    # Worker-side modules and wrappers are built once here, then shared copy-on-write.
    import traceback  # noqa: F401

    from . import worker  # noqa: F401

    for name in sorted(DEFAULT_ALLOWED_MODULES):
        if name in sys.modules:
            module_wrapper(name, DEFAULT_ALLOWED_MODULES)
    make_builtins(DEFAULT_ALLOWED_MODULES)
    warm_up()
    # Every guarded worker runs disarmed: done once here, the replacements and the writes
    # to the library's classes and modules are shared instead of made in each worker (a
    # worker started without the guard undoes it for itself).
    disarm()
    # No collection first: start-up leaves little cyclic garbage, and a full collection of
    # everything just imported costs more than the few kilobytes it would free.
    gc.freeze()
    gc.enable()
    protocol.send(control, [protocol.OK, {
        "pid": zygote.host_pid,
        "seccomp": zygote.seccomp_program is not None,
        "pid_namespace": hardening.PID_NAMESPACE_MISSING is None,
    }])
    zygote.serve()


if __name__ == "__main__":  # python -I -m spade_sandbox.zygote FD, by hand
    main()
