"""Decoys and pools for the attack suite (imported by each attack module).

This is not a ``conftest.py`` on purpose: ``tests/sandbox/conftest.py`` is imported as the
module ``conftest`` by the sandbox tests (``from conftest import ...``), and a second
``conftest.py`` here would take that module name from them.

The decoys are what a successful attack would touch: a root-only file holding a secret, a
canary path in a world-writable directory, TCP / unix / abstract-unix listeners on this
host's loopback, a secret in this process's environment, a signal counter in this
process, and a bystander process running as ``nobody`` (the uid workers run as). After
each attack :func:`assert_contained` checks that none of them was touched.

Each test module gets two pools: ``guarded_pool`` (the normal path: static layer and
runtime guard on) and ``os_pool`` (``unsafe_skip_static_check=True``: only the OS layers
stand in the way). After each module, with its pools closed, this process's descriptors,
memory and child processes must be back where they were, and no process may remain in
the session of any zygote the suite started.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from containment import ATTACK_LIMITS, ENV_SECRET_NAME, NOBODY, ZYGOTE_SESSIONS, Decoys
from hostmem import held_mb

from spade_sandbox import SandboxPool

#: Slack for this process's RSS after a module: allocator arenas and lazily built caches
#: (regex, msgpack buffers, pytest's own reports) grow once and are not returned to the OS;
#: a leak per attack (a worker's reply kept alive, a 10 MB message held) would exceed it.
RSS_SLACK_MB = 20


def _listen_tcp() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    s.setblocking(False)
    return s


def _listen_unix(address: str | bytes) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(address)
    s.listen(8)
    s.setblocking(False)
    return s


def _start_sleeper() -> subprocess.Popen[bytes] | None:
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        return None
    return subprocess.Popen(
        [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "sleep", "3600"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def decoys() -> Iterator[Decoys]:
    secret = "spade-secret-" + secrets.token_hex(16)
    root = Path(tempfile.mkdtemp(prefix="spade-attacks-"))
    root.chmod(0o755)
    secret_file = root / "root-only.txt"
    secret_file.write_text(secret)
    secret_file.chmod(0o600)
    # A world-writable directory: only the sandbox's own layers can keep a canary out.
    open_dir = root / "world-writable"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    unix_path = open_dir / "listener.sock"
    tcp = _listen_tcp()
    unix = _listen_unix(str(unix_path))
    unix_path.chmod(0o777)
    abstract_name = "spade-attack-" + secrets.token_hex(6)
    abstract = _listen_unix(b"\0" + abstract_name.encode())
    received: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: received.append(signum))
    os.environ[ENV_SECRET_NAME] = secret
    d = Decoys(
        secret=secret, root=root, secret_file=secret_file, canary=open_dir / "canary.txt",
        tcp_port=tcp.getsockname()[1], unix_path=unix_path, abstract_name=abstract_name,
        parent_pid=os.getpid(), sleeper=_start_sleeper(), listeners=[tcp, unix, abstract], signals=received,
    )
    try:
        yield d
    finally:
        os.environ.pop(ENV_SECRET_NAME, None)
        signal.signal(signal.SIGUSR1, previous)
        for s in d.listeners:
            s.close()
        if d.sleeper is not None:
            d.sleeper.kill()
            d.sleeper.wait()
        shutil.rmtree(root)


def _fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def _children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE}


def _left_in_zygote_sessions() -> set[int]:
    """Live processes still in a session led by one of this suite's zygotes. (Other
    engineers' sandboxes on this host also run workers as ``nobody``, so the uid alone
    does not say whose a process is.)"""
    found = set()
    for p in psutil.process_iter(["status"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and os.getsid(p.pid) in ZYGOTE_SESSIONS:
                found.add(p.pid)
        except (psutil.Error, OSError):
            continue
    return found


@pytest.fixture(scope="module", autouse=True)
def parent_unchanged(decoys: Decoys) -> Iterator[None]:
    """After a module's attacks (its pools closed): same descriptors, RSS within
    :data:`RSS_SLACK_MB`, no new child process, no process left running as ``nobody``."""
    # Imports and caches the first attack would build are built before the baseline.
    import spade_sandbox.channel
    import spade_sandbox.pool  # noqa: F401

    fds, rss, children = _fd_count(), held_mb(), _children()
    yield
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (_children() - children or _left_in_zygote_sessions()):
        time.sleep(0.05)
    assert _children() - children == set(), "sandbox processes left behind"
    assert _left_in_zygote_sessions() == set(), "processes left in a zygote's session"
    assert _fd_count() == fds, f"descriptors: {fds} before the module, {_fd_count()} after"
    grown = held_mb() - rss
    assert grown < RSS_SLACK_MB, f"this process grew by {grown:.1f} MB during the module"


@pytest.fixture(scope="module")
def guarded_pool() -> Iterator[SandboxPool]:
    """The normal path: static check, runtime guard and every OS layer."""
    with SandboxPool(ATTACK_LIMITS) as p:
        yield p


@pytest.fixture(scope="module")
def os_pool() -> Iterator[SandboxPool]:
    """Static check and runtime guard off: only the OS layers contain the code."""
    with SandboxPool(ATTACK_LIMITS, unsafe_skip_static_check=True) as p:
        yield p


__all__ = ["decoys", "guarded_pool", "os_pool", "parent_unchanged"]
