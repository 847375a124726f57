"""Containment checks shared by the attack modules: the decoys an escaped attack would
touch, and :func:`assert_contained`, which runs one attack and checks them all."""

from __future__ import annotations

import re
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from envsrc import OS_GADGET_MODULES
from hostile import Attack, Outcome
from spade_sandbox.errors import SandboxError, StaticCheckError

from spade_sandbox import SandboxLimits, SandboxPool

#: Short deadlines: every hang in this suite is meant to be cut off.
ATTACK_LIMITS = SandboxLimits(call_timeout_s=3.0, memory_mb=256, cpu_seconds=2)
NOBODY = 65534
#: Sessions of the zygotes this suite started (each zygote leads its own session and its
#: workers cannot leave it: setsid fails under the syscall filter). A process still in one
#: of them after its pool closed is a process left behind.
ZYGOTE_SESSIONS: set[int] = set()
ENV_SECRET_NAME = "SPADE_ATTACK_SECRET"


@dataclass
class Decoys:
    """Everything an escaped attack would reach, and the checks that it did not."""

    secret: str
    root: Path
    secret_file: Path
    canary: Path
    tcp_port: int
    unix_path: Path
    abstract_name: str
    parent_pid: int
    sleeper: subprocess.Popen[bytes] | None
    listeners: list[socket.socket] = field(default_factory=list)
    signals: list[int] = field(default_factory=list)

    def fields(self) -> dict[str, object]:
        """Template values for :func:`hostile.render`."""
        return {
            "SECRET_FILE": self.secret_file,
            "CANARY": self.canary,
            "TCP_PORT": self.tcp_port,
            "UNIX_PATH": self.unix_path,
            "ABSTRACT_NAME": self.abstract_name,
            "PARENT_PID": self.parent_pid,
            "SLEEPER_PID": self.sleeper.pid if self.sleeper else 0,
            "ENV_SECRET_NAME": ENV_SECRET_NAME,
        }

    def untouched(self) -> list[str]:
        """Every side effect an escape would leave; empty when none happened."""
        found = []
        for listener in self.listeners:
            try:
                conn, _ = listener.accept()
            except BlockingIOError:
                continue
            conn.close()
            found.append(f"listener {listener.getsockname()!r} received a connection")
        if self.canary.exists():
            found.append(f"canary {self.canary} was written")
        if not self.secret_file.exists() or self.secret_file.read_text() != self.secret:
            found.append("the root-only file was changed or removed")
        elif self.secret_file.stat().st_mode & 0o777 != 0o600 or self.secret_file.stat().st_uid != 0:
            found.append("the root-only file's mode or owner changed")
        if self.signals:
            found.append(f"this process received signal(s) {self.signals}")
        if self.sleeper is not None and self.sleeper.poll() is not None:
            found.append(f"the bystander process running as nobody died ({self.sleeper.returncode})")
        return found


BYSTANDER = '''
class BystanderEnv:
    def reset(self, seed=None):
        self.n = 0
        return "bystander", {}

    def step(self, action):
        self.n += 1
        return f"{action} {self.n}", 0.0, False, False, {}
'''


def _gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.02)
    return False


def _secret_free(decoys: Decoys, *texts: Any) -> None:
    for text in texts:
        assert decoys.secret not in repr(text), "the secret reached the caller"


def assert_contained(
    pool: SandboxPool, attack: Attack, outcome: Outcome, decoys: Decoys, call: str | None = None
) -> SandboxError | None:
    """Run ``attack`` in ``pool`` and check the outcome and every decoy.

    Returns the error raised (None when the call returned). A static rejection must
    carry readable findings; an OS-layer stop must be the expected error class with the
    expected message, the worker must be gone when the error is fatal, and a bystander
    environment in the same pool must keep working. ``call``: an allow-listed method
    (``"solution"``...) called after the reset instead of the step."""
    bystander = pool.spawn(BYSTANDER)
    pool.reset(bystander)
    zygote = getattr(pool.backend, "_zygote", None)
    if zygote is not None:
        ZYGOTE_SESSIONS.add(zygote.pid)
    source = attack.source(**decoys.fields())
    error: SandboxError | None = None
    result: Any = None
    pid = None
    try:
        # Modules with OS gadgets are allowed only where nothing in-process stands in the way.
        os_only = pool.skip_static and not getattr(pool, "runtime_guard", False)
        handle = pool.spawn(source, allowed_modules=OS_GADGET_MODULES if os_only else ())
        pid = pool.worker_of(handle).pid
        result = pool.reset(handle, seed=0)
        if call is not None:
            result = pool.call(handle, call)
        elif not attack.in_reset:
            result = pool.step(handle, "attack")
    except SandboxError as exc:
        error = exc
    if outcome.error is None:
        if error is not None:  # a quiet failure may also be reported as a policy stop
            assert error.kind in {"policy", "env_code"}, f"unexpected {type(error).__name__}: {error}"
    else:
        assert isinstance(error, outcome.error), (
            f"expected {outcome.error.__name__}, got {type(error).__name__ if error else 'a result'}: {error or result!r}"
        )
        assert outcome.match == "" or re.search(outcome.match, str(error)), str(error)
    if isinstance(error, StaticCheckError):
        assert error.findings and all(f.message for f in error.findings)
        assert pid is None  # rejected before any worker ran it
    elif error is not None and error.kind in {"timeout", "memory", "policy", "crash"} and pid is not None:
        assert _gone(pid), f"worker {pid} still running after {error.kind}"
    _secret_free(decoys, result, error, getattr(error, "env_traceback", None))
    assert decoys.untouched() == []
    assert pool.step(bystander, "still")[0] == "still 1"
    pool.close_env(bystander)
    return error

