"""OS isolation layers a worker applies to itself before any untrusted code runs.

Order (each step needs the privileges the next one removes):

1. rlimits — address space, CPU seconds, open files, file size, no core dumps, all hard;
2. fresh network / mount / IPC / UTS namespaces, plus a user namespace when not root; a
   neutral host name;
3. a private root: an empty read-only tmpfs made the root with ``pivot_root``, the host's
   tree detached, the working directory ``/`` (nothing of the host is left to ``stat``);
   the PID namespace is the zygote's (:func:`enter_pid_namespace`: workers are its
   children, so it unshares once and they are born inside);
4. drop to an unprivileged uid/gid (``nobody``) when running as root;
5. ``no_new_privs``, non-dumpable, die with the parent (the zygote);
6. Landlock deny-all: filesystem, TCP bind/connect, abstract unix sockets, signals;
7. the seccomp allow-list (:mod:`spade_sandbox.seccomp_policy`).

Every layer reports whether it took effect; :func:`apply_layers` returns the names of the
active ones so the pool can refuse to run untrusted code on a host that lacks them.
Imported by the zygote and workers: standard library (and pyseccomp) only.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import time
from dataclasses import dataclass, field
from typing import Any

from .seccomp_policy import install_program

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
_SYS_PIVOT_ROOT = 155 if os.uname().machine == "x86_64" else 41

#: The host name workers see (their own UTS namespace).
SANDBOX_HOSTNAME = b"spade-sandbox"
#: Where the empty root is mounted before ``pivot_root`` (inside the worker's own mount
#: namespace: the host never sees the mount). Any existing directory would do.
_EMPTY_ROOT_AT = (b"/tmp", b"/mnt", b"/proc")

#: Set by the zygote (:func:`enter_pid_namespace`) before it forks workers: ``None`` when
#: its children are born in a PID namespace of its own, else why not.
PID_NAMESPACE_MISSING: str | None = "the zygote did not create a PID namespace"

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38

NOBODY = 65534

# Landlock (x86_64 and aarch64 share these syscall numbers).
_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_ACCESS_NET_BIND_TCP = 1
_LANDLOCK_ACCESS_NET_CONNECT_TCP = 2
_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET = 1
_LANDLOCK_SCOPE_SIGNAL = 2


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


@dataclass
class LayerOptions:
    """Which layers to apply and with what limits: ``SandboxLimits.layer_options()``, sent
    by the pool as a plain dict (every field; the defaults live in the limits)."""

    memory_mb: int
    cpu_seconds: int
    worker_cpu_seconds: int
    max_open_files: int
    max_file_size: int
    namespaces: bool
    drop_uid: bool
    landlock: bool
    seccomp: bool

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LayerOptions:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


@dataclass
class LayerReport:
    """Active layers, missing ones with the reason, and microseconds spent on each."""

    active: list[str] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)
    timings_us: dict[str, int] = field(default_factory=dict)
    _mark: float = field(default_factory=time.perf_counter)

    def mark(self, name: str) -> None:
        """Record the time since the previous mark under ``name``."""
        now = time.perf_counter()
        self.timings_us[name] = int((now - self._mark) * 1e6)
        self._mark = now

    def ok(self, name: str) -> None:
        self.active.append(name)
        self.mark(name)

    def fail(self, name: str, why: str) -> None:
        self.missing[name] = why
        self.mark(name)


def _errno_text() -> str:
    e = ctypes.get_errno()
    return f"{os.strerror(e)} (errno {e})"


def landlock_abi() -> int:
    """Landlock ABI version of this kernel, 0 when unavailable."""
    r = _libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    return int(r) if r > 0 else 0


def _landlock_fs_mask(abi: int) -> int:
    mask = (1 << 13) - 1  # ABI 1: execute .. make_sym
    if abi >= 2:
        mask |= 1 << 13  # refer
    if abi >= 3:
        mask |= 1 << 14  # truncate
    if abi >= 5:
        mask |= 1 << 15  # ioctl_dev
    return mask


#: Limits a worker keeps at their current soft value, made hard so that it cannot raise
#: them (stack size, locked memory, queued signals, POSIX message queues, nice/realtime
#: priority, processes). Those set explicitly below come first.
_FROZEN_RLIMITS = tuple(
    getattr(resource, name)
    for name in ("RLIMIT_STACK", "RLIMIT_MEMLOCK", "RLIMIT_SIGPENDING", "RLIMIT_MSGQUEUE",
                 "RLIMIT_NICE", "RLIMIT_RTPRIO", "RLIMIT_RTTIME", "RLIMIT_NPROC", "RLIMIT_DATA", "RLIMIT_RSS")
    if hasattr(resource, name)
)


def apply_rlimits(opts: LayerOptions) -> None:
    """Every limit hard (soft == hard, or a hard lifetime cap): an unprivileged process may
    lower its limits and raise a soft limit up to the hard one, never raise a hard one, so
    nothing the environment runs can lift them."""
    mem = opts.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    # The soft CPU limit sends SIGXCPU (reported as a timeout). It is a per-request budget:
    # the worker moves it forward when it fires (see worker.CpuBudget), so the hard limit is
    # the worker's lifetime cap, not the per-request one. Code that lifts its soft limit to
    # the hard one gains at most that (the kernel SIGKILLs the worker there), on top of the
    # pool's wall-clock deadline.
    hard = max(opts.worker_cpu_seconds, opts.cpu_seconds)
    resource.setrlimit(resource.RLIMIT_CPU, (opts.cpu_seconds, hard))
    resource.setrlimit(resource.RLIMIT_NOFILE, (opts.max_open_files, opts.max_open_files))
    resource.setrlimit(resource.RLIMIT_FSIZE, (opts.max_file_size, opts.max_file_size))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for which in _FROZEN_RLIMITS:
        soft, _ = resource.getrlimit(which)
        resource.setrlimit(which, (soft, soft))


def unshare_namespaces(as_root: bool) -> None:
    flags = CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS
    if not as_root:
        flags |= CLONE_NEWUSER
    if _libc.unshare(flags) != 0:
        raise OSError(ctypes.get_errno(), f"unshare failed: {_errno_text()}")
    # Its own UTS namespace: the host's name is replaced, not merely hidden.
    if _libc.sethostname(SANDBOX_HOSTNAME, ctypes.c_size_t(len(SANDBOX_HOSTNAME))) != 0:
        raise OSError(ctypes.get_errno(), f"sethostname failed: {_errno_text()}")


def _mount(source: bytes | None, target: bytes, fstype: bytes | None, flags: int, data: bytes | None) -> None:
    if _libc.mount(source, target, fstype, ctypes.c_ulong(flags), data) != 0:
        raise OSError(ctypes.get_errno(), f"mount {target.decode()} failed: {_errno_text()}")


def enter_empty_root() -> None:
    """Make an empty read-only tmpfs this process's root (in its own mount namespace,
    after :func:`unshare_namespaces`): the host's mounts are made private (nothing
    propagates back), the tmpfs is mounted over an existing directory, ``pivot_root``
    swaps it in, the old root is detached and the working directory becomes ``/``. Every
    host path then names nothing: ``stat`` of a host file, ``/proc/<pid>`` of a host
    process and the caller's working directory are gone, not merely denied."""
    _mount(None, b"/", None, MS_REC | MS_PRIVATE, None)
    at = next((d for d in _EMPTY_ROOT_AT if os.path.isdir(d)), None)
    if at is None:
        raise OSError("no directory to mount the empty root on")
    _mount(b"spade-root", at, b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, b"size=4k,nr_inodes=2,mode=0555")
    os.chdir(at)
    # pivot_root(".", "."): the old root ends up stacked on "." and is detached next.
    if _libc.syscall(_SYS_PIVOT_ROOT, b".", b".") != 0:
        raise OSError(ctypes.get_errno(), f"pivot_root failed: {_errno_text()}")
    if _libc.umount2(b".", MNT_DETACH) != 0:
        raise OSError(ctypes.get_errno(), f"detaching the host's root failed: {_errno_text()}")
    os.chdir("/")


def enter_pid_namespace() -> int:
    """Called by the zygote at its start: unshare a PID namespace and fork. The child
    returns 0 and goes on as the zygote, PID 1 of the namespace, so every worker it forks
    is born inside and sees no host process (``kill``, ``sched_getaffinity``, ``/proc``
    name none). The parent returns the child's pid; it only waits for it (it is what the
    pool started, so killing it kills the zygote through the child's parent-death signal,
    and the namespace's PID 1 leaving kills every worker). Where the namespace cannot be
    made (not root), returns 0 without forking and records why in
    :data:`PID_NAMESPACE_MISSING`."""
    global PID_NAMESPACE_MISSING
    if _libc.unshare(CLONE_NEWPID) != 0:
        PID_NAMESPACE_MISSING = f"unshare(CLONE_NEWPID) failed in the zygote: {_errno_text()}"
        return 0
    pid = os.fork()
    if pid == 0:
        PID_NAMESPACE_MISSING = None
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    return pid


def drop_uid() -> None:
    os.setgroups([])
    os.setresgid(NOBODY, NOBODY, NOBODY)
    os.setresuid(NOBODY, NOBODY, NOBODY)


def prctl(option: int, arg: int) -> None:
    if _libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed: {_errno_text()}")


def apply_landlock() -> str:
    abi = landlock_abi()
    if abi <= 0:
        raise OSError("Landlock is not available on this kernel")
    attr = _RulesetAttr(_landlock_fs_mask(abi), 0, 0)
    size = 8
    parts = ["fs"]
    if abi >= 4:
        attr.handled_access_net = _LANDLOCK_ACCESS_NET_BIND_TCP | _LANDLOCK_ACCESS_NET_CONNECT_TCP
        size = 16
        parts.append("tcp")
    if abi >= 6:
        attr.scoped = _LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | _LANDLOCK_SCOPE_SIGNAL
        size = 24
        parts += ["abstract-unix", "signal"]
    fd = _libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if fd < 0:
        raise OSError(ctypes.get_errno(), f"landlock_create_ruleset failed: {_errno_text()}")
    try:
        # No rules added: every handled access is denied.
        if _libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_restrict_self failed: {_errno_text()}")
    finally:
        os.close(fd)
    return f"abi {abi}: deny {'+'.join(parts)}"


def apply_layers(opts: LayerOptions, seccomp_program: bytes | None, parent_pid: int) -> LayerReport:
    """Apply the layers in order; never raises: failures are recorded in the report."""
    report = LayerReport()
    as_root = os.geteuid() == 0
    try:
        apply_rlimits(opts)
        report.ok("rlimits")
    except (OSError, ValueError) as exc:
        report.fail("rlimits", str(exc))
    if opts.namespaces:
        try:
            unshare_namespaces(as_root)
            if not as_root:
                report.active.append("userns")
            report.ok("namespaces")
        except OSError as exc:
            report.fail("namespaces", str(exc))
        else:
            try:
                enter_empty_root()
                report.ok("private_root")
            except OSError as exc:
                report.fail("private_root", str(exc))
        if PID_NAMESPACE_MISSING is None:
            report.ok("pid_namespace")
        else:
            report.fail("pid_namespace", PID_NAMESPACE_MISSING)
    try:
        # Never the caller's directory (the zygote starts in "/" too; this covers a
        # worker whose private root could not be made).
        os.chdir("/")
    except OSError:
        pass
    if as_root and opts.drop_uid:
        try:
            drop_uid()
            report.ok("uid_drop")
        except OSError as exc:
            report.fail("uid_drop", str(exc))
    try:
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        prctl(PR_SET_DUMPABLE, 0)
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent_pid:  # the zygote died before we armed the signal
            os._exit(70)
        report.ok("no_new_privs")
    except OSError as exc:
        report.fail("no_new_privs", str(exc))
    if opts.landlock:
        try:
            apply_landlock()
            report.ok("landlock")
        except OSError as exc:
            report.fail("landlock", str(exc))
    if opts.seccomp:
        if seccomp_program is None:
            report.fail("seccomp", "libseccomp (pyseccomp) is not available")
        else:
            try:
                install_program(seccomp_program)
                report.ok("seccomp")
            except OSError as exc:
                report.fail("seccomp", str(exc))
    return report


def secure_enough(active: list[str]) -> bool:
    """The refusal policy: untrusted code runs only under seccomp, or Landlock plus rlimits."""
    return "seccomp" in active or ("landlock" in active and "rlimits" in active)
