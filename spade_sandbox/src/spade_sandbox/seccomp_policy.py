"""The worker's seccomp filter: an allow-list of the syscalls a running CPython needs.

* allowed: memory management, reading/writing already-open descriptors (the worker's one
  socket), clocks, futexes, signals to itself, exit;
* killed (the whole process, reported as a policy violation): exec, ptrace, namespace and
  mount calls, bpf, kernel modules, keyrings, perf, userfaultfd, io_uring...;
* everything else — including fork/clone, open/openat, socket, connect — fails with
  ``EPERM``, which the worker reports as a policy violation if the code does not handle it.

The filter is compiled to BPF once in the zygote (:func:`compile_program`); each worker
installs the ready program with one ``prctl`` (:func:`install_program`), which costs a few
microseconds instead of libseccomp's per-load compilation.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
import types
from typing import Any

_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_SOCK_FILTER_SIZE = 8


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

ALLOWED_SYSCALLS: tuple[str, ...] = (
    # descriptors the worker already holds
    "read", "write", "readv", "writev", "pread64", "pwrite64", "recvfrom", "sendto",
    "recvmsg", "sendmsg", "close", "fstat", "newfstatat", "lseek", "fcntl", "dup", "dup3",
    "poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "shutdown",
    "getsockopt", "ioctl",
    # memory
    "brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "mincore",
    # signals, threads of the interpreter itself, time
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "sigaltstack",
    "futex", "futex_waitv", "set_robust_list", "get_robust_list", "rseq", "restart_syscall",
    "sched_yield", "sched_getaffinity", "nanosleep", "clock_nanosleep", "clock_gettime",
    "clock_getres", "gettimeofday", "time", "getrandom",
    # identity and limits (read-only)
    "getpid", "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid", "getresuid",
    "getresgid", "getrlimit", "getrusage", "times", "uname", "getcwd",
    "sysinfo",
    "exit", "exit_group",
)

#: Calls that only an escape attempt makes: kill the process at once.
KILLED_SYSCALLS: tuple[str, ...] = (
    "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev", "unshare",
    "setns", "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree",
    "fsopen", "fsmount", "fsconfig", "mount_setattr", "bpf", "init_module",
    "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon",
    "swapoff", "keyctl", "add_key", "request_key", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "open_by_handle_at",
    "name_to_handle_at", "personality", "seccomp", "landlock_create_ruleset",
    "landlock_add_rule", "landlock_restrict_self", "pidfd_getfd", "kcmp", "acct",
    "settimeofday", "clock_settime", "adjtimex", "quotactl", "syslog", "vhangup",
)


#: Sonames tried with ``dlopen`` before ``ctypes.util.find_library``.
_SONAMES = {"c": ("libc.so.6",), "seccomp": ("libseccomp.so.2",)}


def _soname(name: str) -> str | None:
    """The first of the usual sonames of library ``name`` that ``dlopen`` loads."""
    for soname in _SONAMES.get(name, ()):
        try:
            ctypes.CDLL(soname)
        except OSError:
            continue
        return soname
    return None


def _import_pyseccomp() -> Any:
    """``import pyseccomp``, without its slow part: at import it looks up libc and
    libseccomp with ``ctypes.util.find_library``, which runs ``ldconfig -p`` (and possibly
    a compiler) as subprocesses, and ``ctypes.util`` itself imports ``shutil`` and
    ``subprocess`` — most of a zygote's start-up. Where ``dlopen`` loads the usual sonames
    (it searches the same linker cache), pyseccomp sees a stand-in ``ctypes.util`` that
    answers with them, removed again right after; otherwise the original lookup runs."""
    found = {name: _soname(name) for name in _SONAMES}
    if "pyseccomp" in sys.modules or "ctypes.util" in sys.modules or not all(found.values()):
        import pyseccomp

        return pyseccomp
    stand_in = types.ModuleType("ctypes.util")
    stand_in.find_library = found.get  # type: ignore[attr-defined]
    sys.modules["ctypes.util"] = stand_in
    ctypes.util = stand_in  # type: ignore[attr-defined]
    try:
        import pyseccomp
    finally:
        del sys.modules["ctypes.util"]
        if getattr(ctypes, "util", None) is stand_in:
            del ctypes.util  # type: ignore[attr-defined]
    return pyseccomp


def build_filter() -> Any | None:
    """A ``pyseccomp.SyscallFilter`` implementing the policy, or ``None`` when libseccomp
    is not usable here."""
    try:
        sc = _import_pyseccomp()
    except Exception:  # libseccomp missing: the pool reports the layer as inactive
        return None
    f = sc.SyscallFilter(defaction=sc.ERRNO(errno.EPERM))
    for name in ALLOWED_SYSCALLS:
        try:
            f.add_rule(sc.ALLOW, name)
        except Exception:  # syscall unknown on this architecture
            continue
    # prlimit64 can read or set the limits of *any* process of the same uid (every worker
    # runs as the same unprivileged uid): allow it only on the calling process (pid 0),
    # which is what getrlimit/setrlimit in the C library use.
    f.add_rule(sc.ALLOW, "prlimit64", sc.Arg(0, sc.EQ, 0))
    for name in KILLED_SYSCALLS:
        try:
            f.add_rule(sc.KILL_PROCESS, name)
        except Exception:
            continue
    # Sockets cannot be created (EPERM by default); the inherited socketpair keeps working.
    return f


def compile_program() -> bytes | None:
    """The policy as a classic-BPF program (``struct sock_filter[]`` bytes), or ``None``."""
    f = build_filter()
    if f is None:
        return None
    fd = os.memfd_create("spade-seccomp")
    try:
        with os.fdopen(os.dup(fd), "wb") as out:
            f.export_bpf(out)
        size = os.lseek(fd, 0, os.SEEK_END)
        program = os.pread(fd, size, 0)
    finally:
        os.close(fd)
    if not program or len(program) % _SOCK_FILTER_SIZE:
        return None
    return program


def install_program(program: bytes) -> None:
    """Install ``program`` on the calling thread (requires ``no_new_privs``)."""
    buf = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // _SOCK_FILTER_SIZE, ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"installing the seccomp filter failed: {os.strerror(err)}")
