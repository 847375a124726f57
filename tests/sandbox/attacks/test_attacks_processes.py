"""Processes: fork, fork bombs, exec, signals to this process / the zygote / everyone,
ptrace and friends through ctypes. ``fork``/``clone`` and ``kill`` fail with EPERM;
``execve``, ``ptrace``, ``process_vm_readv``, ``unshare`` and ``mount`` kill the worker
(SIGSYS, reported as a policy violation). A bystander process running as ``nobody`` (the
workers' uid) must survive ``kill(-1, SIGKILL)``; this process must receive no signal."""

from __future__ import annotations

import pytest
from attack_fixtures import *  # noqa: F403 (the suite's fixtures: decoys, pools, parent checks)
from containment import BYSTANDER, assert_contained
from envsrc import OS_GADGET_MODULES
from hostile import CRASH, KILLED, POLICY, QUIET, Attack, Outcome, static
from spade_sandbox.errors import SandboxCrash, SandboxError

LIBC = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)"

ATTACKS = [
    Attack("fork", "import os\nif os.fork() == 0:\n    open('{CANARY}', 'w').write('child')",
           static("import"), POLICY, "static; seccomp clone/fork=EPERM; cgroup pids"),
    Attack("fork-bomb", "import os\nwhile True:\n    os.fork()",
           static("import"), POLICY, "static; seccomp clone/fork=EPERM; RLIMIT/cgroup pids"),
    Attack("subprocess-run", 'import subprocess\nsubprocess.run(["cp", "{SECRET_FILE}", "{CANARY}"])',
           static("import"), POLICY, "static; seccomp clone=EPERM (exec would be killed)"),
    Attack("os-system", 'import os\nreturn str(os.system("cp {SECRET_FILE} {CANARY}")), 0.0, False, False, {}',
           static("import"), QUIET, "static; seccomp clone=EPERM (system() returns -1)"),
    Attack("posix-spawn", 'import os\nos.posix_spawn("/bin/cp", ["cp", "{SECRET_FILE}", "{CANARY}"], {})',
           static("import"), POLICY, "static; seccomp clone=EPERM"),
    Attack("execve-shell", 'import os\nos.execv("/bin/sh", ["sh", "-c", "cp {SECRET_FILE} {CANARY}"])',
           static("import"), KILLED, "static; seccomp execve=KILL"),
    Attack("signal-the-parent", "import os, signal\nos.kill({PARENT_PID}, signal.SIGUSR1)",
           static("import"), POLICY, "static; seccomp kill=EPERM; landlock signal scope; uid nobody"),
    Attack("kill-every-process", "import os\nos.kill(-1, 9)",
           static("import"), POLICY, "static; seccomp kill=EPERM; landlock signal scope"),
    Attack("kill-the-bystander", "import os\nos.kill({SLEEPER_PID}, 9)",
           static("import"), POLICY, "static; seccomp kill=EPERM; landlock signal scope"),
    Attack("kill-the-zygote", "import os\nos.kill(os.getppid(), 9)",
           static("import"), POLICY, "static; seccomp kill=EPERM"),
    Attack("setuid-root", "import os\nos.setuid(0)",
           static("import"), POLICY, "static; seccomp setuid=EPERM; no_new_privs"),
    Attack("ptrace-attach-parent", LIBC + "\nlibc.ptrace(16, {PARENT_PID}, 0, 0)",
           static("import"), KILLED, "static; seccomp ptrace=KILL; non-dumpable"),
    Attack("process-vm-readv-parent", LIBC + "\nlibc.syscall(310, {PARENT_PID}, 0, 0, 0, 0, 0)",
           static("import"), KILLED, "static; seccomp process_vm_readv=KILL"),
    Attack("ctypes-raw-execve", LIBC + '\nlibc.syscall(59, b"/bin/sh", None, None)',
           static("import"), KILLED, "static; seccomp execve=KILL"),
    Attack("ctypes-unshare-userns", LIBC + "\nlibc.unshare(0x10000000)",
           static("import"), KILLED, "static; seccomp unshare=KILL"),
    Attack("ctypes-mount-proc", LIBC + '\nlibc.mount(b"proc", b"/tmp", b"proc", 0, None)',
           static("import"), KILLED, "static; seccomp mount=KILL"),
    Attack("ctypes-null-dereference", "import ctypes\nctypes.string_at(0)",
           static("import"), Outcome(SandboxCrash, "SIGSEGV"), "static; a crash of its own worker only"),
    Attack("ctypes-overwrite-interpreter-memory", "import ctypes\nctypes.memset(id(1), 0, 4096)\nreturn str(1 + 1), 0.0, False, False, {}",
           static("import"), CRASH, "static; a crash of its own worker only"),
]


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_normal_path_contains(guarded_pool, decoys, attack):
    assert_contained(guarded_pool, attack, attack.guarded, decoys)


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_os_layers_alone_contain(os_pool, decoys, attack):
    assert_contained(os_pool, attack, attack.os_only, decoys)


# --- limits of other processes ----------------------------------------------------------------
#
# prlimit64 is on the seccomp allow-list (read-only use: getrlimit), Landlock does not cover
# it, and every worker runs as the same uid: a worker can rewrite the limits of any other
# worker on the host (other environments, other pools) and of anything else running as
# nobody. The targets here are only processes this test started.

PRLIMIT = (
    "for pid in ({BYSTANDER_PID}, {SLEEPER_PID}):\n"
    "    if pid:\n"
    "        RESOURCE.prlimit(pid, RESOURCE.RLIMIT_AS, (1 << 20, 1 << 20))"
)
REACH_RESOURCE = {
    "os-layers": "import resource as RESOURCE",
    # string.Formatter walks dunders from a string neither filter looks at (see the
    # interpreter attacks); from the real os module, sys.modules has resource.
    "normal-path": "import string, random\nu = '_' * 2\n"
    "g = string.Formatter().get_field('0.seed.' + u + 'globals' + u, [random.Random], {})[0]\n"
    "RESOURCE = g['_os'].sys.modules['resource']",
}


def _limits(pid: int) -> str:
    with open(f"/proc/{pid}/limits") as f:
        return f.read()


@pytest.mark.parametrize("mode", ["os-layers", "normal-path"])
def test_a_worker_cannot_change_the_limits_of_other_processes(guarded_pool, os_pool, decoys, mode):
    pool = os_pool if mode == "os-layers" else guarded_pool
    bystander = pool.spawn(BYSTANDER)
    pool.reset(bystander)
    target = pool.worker_of(bystander).pid
    watched = [target] + ([decoys.sleeper.pid] if decoys.sleeper else [])
    before = {pid: _limits(pid) for pid in watched}
    attack = Attack("prlimit-others", REACH_RESOURCE[mode] + "\n" + PRLIMIT, QUIET, QUIET, "")
    try:
        h = pool.spawn(attack.source(**decoys.fields(), BYSTANDER_PID=target))
        pool.step(h, "attack")
    except SandboxError:
        pass  # the attack was refused: what matters is whether the limits changed
    after = {pid: _limits(pid) for pid in watched}
    pool.close_env(bystander)
    assert after == before, "another process's limits were changed"


SIGIO_TO = (
    "import os, fcntl\nfor fd in range(3, 16):\n    try:\n"
    "        fcntl.fcntl(fd, fcntl.F_SETOWN, {TARGET})\n"
    "        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC)\n"
    "    except OSError:\n        pass"
)


@pytest.mark.parametrize("target", ["sleeper", "bystander-worker"])
def test_sigio_cannot_be_aimed_at_another_process(os_pool, decoys, target):
    """``fcntl`` is allowed (the interpreter needs it), so a worker can make its own socket
    signal-driven with SIGIO aimed at another pid (default action: terminate) — the next
    request would deliver it. Landlock's signal scope keeps the signal inside the worker."""
    bystander = os_pool.spawn(BYSTANDER)
    os_pool.reset(bystander)
    pid = decoys.sleeper.pid if target == "sleeper" and decoys.sleeper else os_pool.worker_of(bystander).pid
    attack = Attack("sigio", SIGIO_TO.replace("{TARGET}", str(pid)), QUIET, QUIET, "")
    h = os_pool.spawn(attack.source(**decoys.fields()), allowed_modules=OS_GADGET_MODULES)
    os_pool.step(h, "arm")
    os_pool.step(h, "fire")  # data on the socket: the kernel would now send SIGIO
    assert os_pool.step(bystander, "still")[0] == "still 1"
    assert decoys.untouched() == []
