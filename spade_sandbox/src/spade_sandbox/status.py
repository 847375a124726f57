"""Which isolation layers are active on this host (``spade sandbox check``).

:func:`sandbox_status` starts a real worker with every layer requested and reports what
it could apply, plus host facts (Landlock ABI, user namespaces, cgroups, outer jails).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pydantic import BaseModel

from . import native
from .hardening import landlock_abi, secure_enough

#: Layers in the order a worker applies them.
LAYERS: tuple[str, ...] = (
    "rlimits", "namespaces", "userns", "private_root", "pid_namespace", "uid_drop", "no_new_privs", "landlock",
    "seccomp", "cgroup",
)

_DESCRIPTIONS = {
    "rlimits": "address space, CPU time, open files, file size, no core dumps; all hard (not liftable)",
    "namespaces": "fresh network, mount, IPC and UTS namespaces; host name 'spade-sandbox'",
    "private_root": "an empty read-only tmpfs as root (pivot_root; host tree detached), cwd '/'",
    "pid_namespace": "workers born in the zygote's own PID namespace (no host process visible)",
    "userns": "user namespace (used when not running as root)",
    "uid_drop": "switch to uid/gid 65534 (used when running as root)",
    "no_new_privs": "no_new_privs, non-dumpable, killed with the zygote",
    "landlock": "Landlock deny-all: files, TCP, abstract sockets, signals",
    "seccomp": "seccomp allow-list; exec/ptrace/mount/bpf... kill the worker",
    "cgroup": "own memory + pids cgroup per worker (pids.max = 1), under the zygote's cgroup",
}


class LayerStatus(BaseModel):
    name: str
    active: bool
    applicable: bool = True
    detail: str


class SandboxStatus(BaseModel):
    """The sandbox's view of this host. ``secure`` is the refusal policy's verdict: untrusted
    code runs only if seccomp, or Landlock plus rlimits, is active (or the user overrides)."""

    backend: str
    running_as_root: bool
    layers: list[LayerStatus]
    secure: bool
    landlock_abi: int
    cgroup: str | None
    outer_jails: dict[str, str | None]
    #: Whether the C step fast path (spade_sandbox._fast) is in use: in this process, and in
    #: the probe worker (None: no worker answered); ``c_fast_path_detail`` says why not.
    c_fast_path: bool = False
    c_fast_path_worker: bool | None = None
    c_fast_path_detail: str = ""
    error: str | None = None

    def active(self) -> list[str]:
        return [layer.name for layer in self.layers if layer.active]


def _cgroup() -> str | None:
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "" and Path("/sys/fs/cgroup/cgroup.controllers").exists():
            return f"v2 {path}"
        if "memory" in controllers.split(","):
            return f"v1 memory {path}"
    return None


def sandbox_status(backend: str = "native") -> SandboxStatus:
    """Probe the layers by starting one worker (with ``allow_insecure`` so the probe itself
    is not refused) and asking what it applied."""
    from spade_core.sandbox_settings import SandboxSettings

    from .errors import SandboxError
    from .launcher import SandboxLauncher

    as_root = os.geteuid() == 0
    active: list[str] = []
    missing: dict[str, str] = {}
    error = None
    worker_fast: bool | None = None
    try:
        with SandboxLauncher(SandboxSettings(backend=backend, allow_insecure=True)).pool() as pool:
            h = pool.spawn("class ProbeEnv:\n    def reset(self, seed=None):\n        return 'ok', {}\n"
                           "    def step(self, a):\n        return 'ok', 0.0, True, False, {}\n")
            link = pool._link(h)
            active, missing = list(link.layers), dict(link.missing_layers)
            worker_fast = getattr(link, "c_fast_path", None)
    except SandboxError as exc:
        error = str(exc)
    layers = []
    for name in LAYERS:
        applicable = not ((name == "userns" and as_root) or (name == "uid_drop" and not as_root))
        detail = _DESCRIPTIONS[name]
        if name in missing:
            detail = f"unavailable: {missing[name]}"
        elif name == "cgroup" and name not in active:
            detail = "unavailable: no writable memory+pids cgroup hierarchy (optional layer)"
        elif not applicable:
            detail = "not needed: " + ("running as root" if name == "userns" else "not running as root")
        layers.append(LayerStatus(name=name, active=name in active, applicable=applicable, detail=detail))
    jails = {"nsjail": shutil.which("nsjail"), "bwrap": shutil.which("bwrap")}
    return SandboxStatus(
        backend=backend,
        running_as_root=as_root,
        layers=layers,
        secure=secure_enough(active),
        landlock_abi=landlock_abi(),
        cgroup=_cgroup(),
        outer_jails=jails,
        c_fast_path=native.active(),
        c_fast_path_worker=worker_fast,
        c_fast_path_detail=native.reason,
        error=error,
    )
