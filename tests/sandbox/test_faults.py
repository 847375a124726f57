"""Fault containment: hangs, memory bombs, crashes and escape attempts are stopped, reported
as specific errors, and never disturb the caller or other environments."""

from __future__ import annotations

import re
import time

import psutil
import pytest
from conftest import open_fds, sandbox_processes
from envsrc import COUNTER, OS_GADGET_MODULES, step_body
from spade_sandbox.errors import (
    InstanceLost,
    SandboxCrash,
    SandboxMemoryError,
    SandboxPolicyViolation,
    SandboxTimeout,
    StaticCheckError,
    WorkerKilled,
)

from spade_sandbox import SandboxLimits, SandboxPool

TIMEOUT_S = 1.0


@pytest.fixture(scope="module")
def fault_pool():
    with SandboxPool(SandboxLimits(call_timeout_s=TIMEOUT_S, memory_mb=256)) as p:
        yield p


@pytest.fixture(scope="module")
def bystander(fault_pool: SandboxPool):
    """An innocent environment in the same pool; checked after every fault."""
    h = fault_pool.spawn(COUNTER)
    fault_pool.reset(h, seed=1)
    return h


def still_fine(pool: SandboxPool, h) -> None:
    obs, reward, *_ = pool.step(h, "still here?")
    assert obs.endswith("still here?") and reward == 0.0


def test_infinite_loop_times_out_within_the_deadline_and_kills_only_its_worker(fault_pool, bystander):
    src = step_body("while True:\n    pass", name="HangEnv")
    h, sibling = fault_pool.spawn(src), fault_pool.spawn(src)
    pid = fault_pool.worker_of(h).pid
    t0 = time.monotonic()
    with pytest.raises(SandboxTimeout, match=r"did not answer within 1 s") as info:
        fault_pool.step(h, "go")
    elapsed = time.monotonic() - t0
    assert elapsed < TIMEOUT_S + 10.0  # generous: the host is shared; the deadline is what matters
    assert "2 instance(s) are lost" in str(info.value)
    assert pid not in {p.pid for p in sandbox_processes()}
    with pytest.raises(InstanceLost, match="instance lost because worker"):
        fault_pool.step(sibling, "x")
    fresh = fault_pool.spawn(src)  # the pool starts a new worker for the same code
    assert fault_pool.worker_of(fresh).pid != pid
    assert fault_pool.reset(fresh) == ("ready", {})
    still_fine(fault_pool, bystander)


def test_cpu_time_limit_stops_a_spinning_worker():
    with SandboxPool(SandboxLimits(call_timeout_s=30, cpu_seconds=1)) as p:
        h = p.spawn(step_body("while True:\n    pass", name="SpinEnv"))
        t0 = time.monotonic()
        with pytest.raises(SandboxTimeout, match="CPU-time limit"):
            p.step(h, "go")
        assert time.monotonic() - t0 < 20


def test_memory_bomb_is_a_memory_error():
    # A generous deadline: filling the address space page by page is slow on a busy host.
    with SandboxPool(SandboxLimits(call_timeout_s=60, memory_mb=128)) as p:
        bystander = p.spawn(COUNTER)
        p.reset(bystander, seed=1)
        h = p.spawn(step_body("hog = []\nwhile True:\n    hog.append(bytearray(8 << 20))", name="HogEnv"))
        with pytest.raises(SandboxMemoryError, match="memory"):
            p.step(h, "eat")
        with pytest.raises(SandboxCrash, match="instance lost"):
            p.reset(h)
        still_fine(p, bystander)


def test_one_huge_allocation_is_a_memory_error(fault_pool, bystander):
    h = fault_pool.spawn(step_body("x = 'a' * (1 << 31)", name="HugeEnv"))
    with pytest.raises(SandboxMemoryError):
        fault_pool.step(h, "eat")
    still_fine(fault_pool, bystander)


def test_recursion_is_an_ordinary_env_error(fault_pool, bystander):
    from spade_sandbox.errors import EnvCodeError

    src = "def f(n):\n    return f(n + 1)\n" + step_body("f(0)", name="DeepEnv")
    h = fault_pool.spawn(src)
    with pytest.raises(EnvCodeError, match="RecursionError"):
        fault_pool.step(h, "dive")
    assert fault_pool.reset(h) == ("ready", {})


@pytest.mark.parametrize(
    "snippet",
    [
        "open('/etc/passwd').read()",
        "import socket\nsocket.socket().connect(('127.0.0.1', 80))",
        "import os\nos.fork()",
        "import os\nos.execv('/bin/sh', ['sh'])",
        "import subprocess\nsubprocess.run(['id'])",
        "__import__('os').system('id')",
    ],
)
def test_static_layer_rejects_escape_attempts(fault_pool, snippet):
    with pytest.raises(StaticCheckError):
        fault_pool.spawn(step_body(snippet))


# --- the OS layers alone (static check and runtime guard switched off) -----------------------


@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        ("open('/etc/passwd').read()", "Operation not permitted"),
        ("open('/tmp/spade-sandbox-escape', 'w').write('x')", "Operation not permitted"),
        ("import os\nos.listdir('/')", "Operation not permitted"),
        ("import socket\nsocket.socket(socket.AF_INET, socket.SOCK_STREAM)", "Operation not permitted"),
        ("import socket\nsocket.socket(socket.AF_UNIX, socket.SOCK_STREAM)", "Operation not permitted"),
        ("import os\nos.fork()", "Operation not permitted"),
        ("import os\nos.kill(1, 9)", "Operation not permitted"),
        ("import subprocess\nsubprocess.run(['id'])", "Operation not permitted"),
    ],
)
def test_os_layers_deny_files_network_and_processes(os_layer_pool, snippet, needle):
    h = os_layer_pool.spawn(step_body(snippet, name="EscapeEnv"), allowed_modules=OS_GADGET_MODULES)
    with pytest.raises(SandboxPolicyViolation, match=needle) as info:
        os_layer_pool.step(h, "escape")
    assert info.value.kind == "policy"


def test_modules_not_preloaded_cannot_be_imported(os_layer_pool):
    from spade_sandbox.errors import EnvCodeError

    h = os_layer_pool.spawn(step_body("import sqlite3", name="ImportEnv"))
    with pytest.raises(EnvCodeError, match="No module named 'sqlite3'"):
        os_layer_pool.step(h, "import")


@pytest.mark.parametrize(
    "snippet",
    [
        "open('/etc/passwd').read()",
        "open('/tmp/spade-sandbox-escape', 'w').write('x')",
        "import os\nos.listdir('/')",
        "import socket\ns = socket.socket()\ns.connect(('127.0.0.1', 22))",
    ],
)
def test_landlock_alone_denies_files_and_tcp(snippet):
    """With seccomp and the namespaces (so the private root too) off, Landlock alone stops
    the code."""
    limits = SandboxLimits(call_timeout_s=5.0, seccomp=False, namespaces=False)
    with SandboxPool(limits, unsafe_skip_static_check=True) as p:
        h = p.spawn(step_body(snippet, name="LandlockEnv"))
        assert "seccomp" not in p.worker_of(h).layers and "landlock" in p.worker_of(h).layers
        with pytest.raises(SandboxPolicyViolation, match="Permission denied|Network is unreachable"):
            p.step(h, "escape")


def test_exec_is_killed_by_the_syscall_filter(os_layer_pool):
    h = os_layer_pool.spawn(step_body("import os\nos.execv('/bin/sh', ['sh', '-c', 'id'])", name="ExecEnv"))
    with pytest.raises(SandboxPolicyViolation, match="syscall filter"):
        os_layer_pool.step(h, "exec")


def test_the_charged_cpu_clock_is_what_the_kernel_s_cpu_limit_kill_counts() -> None:
    """The zygote tells the kernel's RLIMIT_CPU kill by the child's profiling CPU clock,
    read while it is a zombie: that clock is at the hard limit when the kernel kills there
    (the rusage times may read short of it on a loaded machine)."""
    import os
    import resource
    import signal

    from spade_sandbox.zygote import charged_cpu_seconds

    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child spins until the kernel kills it
        resource.setrlimit(resource.RLIMIT_CPU, (1, 1))
        while True:
            pass
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    charged = charged_cpu_seconds(pid)
    _, status, _ = os.wait4(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert charged is not None and charged >= 1.0 - 0.005, charged
    assert charged_cpu_seconds(pid) is None  # reaped: nothing to read


def test_a_worker_killed_from_outside_is_told_apart_from_one_its_call_killed(fault_pool):
    """A SIGKILL the sandbox did not send is a WorkerKilled (the running call is not to
    blame); the worker's other instances are then InstanceLost; both are crashes."""
    import os
    import signal

    h, sibling = fault_pool.spawn(COUNTER), fault_pool.spawn(COUNTER)
    fault_pool.reset(h, seed=1)
    os.kill(fault_pool.worker_of(h).pid, signal.SIGKILL)
    with pytest.raises(WorkerKilled, match="died from signal SIGKILL") as killed:
        fault_pool.step(h, "x")
    # the evidence for telling an outside kill from the kernel's RLIMIT_CPU one: far below it
    cpu = re.search(r"\(([\d.]+) s of CPU time, its hard limit (\d+) s\)", killed.value.message)
    assert cpu is not None and float(cpu[1]) < 0.9 * int(cpu[2]) - 0.05, killed.value.message
    with pytest.raises(InstanceLost) as lost:
        fault_pool.step(sibling, "x")
    assert killed.value.kind == lost.value.kind == "crash"


def test_os_exit_is_a_crash(os_layer_pool):
    h = os_layer_pool.spawn(step_body("import os\nos._exit(7)", name="ExitEnv"))
    with pytest.raises(SandboxCrash, match="exited with code 7"):
        os_layer_pool.step(h, "bye")


def test_segfault_is_a_crash(os_layer_pool):
    h = os_layer_pool.spawn(step_body("import ctypes\nctypes.string_at(0)", name="SegvEnv"))
    with pytest.raises(SandboxCrash, match="SIGSEGV"):
        os_layer_pool.step(h, "crash")


def test_workers_run_unprivileged_in_their_own_namespaces(pool):
    """Seen from outside through /proc: every layer is really in force on the worker."""
    import os

    h = pool.spawn(COUNTER)
    pid = pool.worker_of(h).pid
    status = dict(
        line.split(":", 1) for line in open(f"/proc/{pid}/status").read().splitlines() if ":" in line
    )
    assert status["NoNewPrivs"].strip() == "1"
    assert status["Seccomp"].strip() == "2"
    uids = status["Uid"].split()
    assert uids[0] != "0" and uids[1] != "0"
    assert int(status["CapEff"].strip(), 16) == 0 or os.geteuid() != 0
    for ns in ("net", "mnt", "ipc", "uts"):
        assert os.readlink(f"/proc/{pid}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}")
    limits = open(f"/proc/{pid}/limits").read()
    assert "Max core file size        0" in limits
    assert set(pool.worker_of(h).layers) >= {"rlimits", "namespaces", "no_new_privs", "landlock", "seccomp"}


def test_closing_pools_leaves_no_process_and_no_descriptor():
    fds_before = open_fds()
    procs_before = {p.pid for p in sandbox_processes()}
    # Zygotes of other pools (module fixtures) may fork a spare worker at any moment:
    # only processes outside them can be left over by this pool.
    # (A zygote is the process its pool started and, where it made a PID namespace, that
    # process's one child: the zygote proper, parent of the workers.)
    other_zygotes = {q.pid for p in psutil.Process().children() for q in [p, *p.children()]}
    with SandboxPool(SandboxLimits(call_timeout_s=TIMEOUT_S)) as p:
        hs = [p.spawn(COUNTER + f"\n# v{i}\n") for i in range(3)]
        hang = p.spawn(step_body("while True:\n    pass", name="HangEnv"))
        with pytest.raises(SandboxTimeout):
            p.step(hang, "go")
        p.step_many([(h, "a") for h in hs])
        assert len({p.worker_of(h).pid for h in hs}) == 3
    assert {q.pid for q in sandbox_processes() if _parent(q) not in other_zygotes} <= procs_before
    assert open_fds() == fds_before


def test_zygote_death_loses_its_workers_and_the_pool_recovers():
    import os
    import signal

    with SandboxPool(SandboxLimits(call_timeout_s=5)) as p:
        h = p.spawn(COUNTER)
        p.reset(h, seed=1)
        worker = p.worker_of(h).pid
        os.kill(p.backend._zygote.pid, signal.SIGKILL)
        assert not psutil_pid_exists(worker)  # workers die with their zygote
        with pytest.raises(SandboxCrash):
            p.step(h, "x")
        fresh = p.spawn(COUNTER)
        assert p.reset(fresh, seed=1)[0].startswith("secret ")


def _parent(proc: psutil.Process) -> int | None:
    try:
        return proc.ppid()
    except psutil.NoSuchProcess:
        return None


def psutil_pid_exists(pid: int) -> bool:
    import psutil

    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return False
        time.sleep(0.05)
    return True


def test_whether_an_error_ends_its_worker_is_a_property_of_its_class():
    """What the pool, ``spade serve``'s sessions and the TRL adapter read instead of a list
    of kinds: an error that ends the worker (every instance it held is lost) says so."""
    from spade_sandbox.errors import (
        ERRORS_BY_KIND,
        EnvCodeError,
        EnvContractViolation,
        SandboxError,
        StaticCheckError,
        error_from_reply,
    )

    fatal = {kind for kind, cls in ERRORS_BY_KIND.items() if cls.worker_fatal}
    assert fatal == {"timeout", "memory", "crash", "policy", "unavailable"}
    assert not EnvCodeError("x").worker_fatal and not EnvContractViolation("x").worker_fatal
    assert not StaticCheckError([]).worker_fatal and not SandboxError("x").worker_fatal
    assert error_from_reply(["err", "memory", "out of memory"], "step()").worker_fatal
    assert not error_from_reply(["err", "env_code", "raised"], "step()").worker_fatal
