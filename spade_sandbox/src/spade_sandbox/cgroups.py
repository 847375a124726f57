"""Per-worker cgroups (memory, pids) created by the zygote under its own cgroup.

When the zygote may write to its cgroup hierarchies (typically as root), every worker gets
its own group ``<zygote's cgroup>/spade-zygote-<pid>/w<worker pid>`` with

* a memory limit (the worker's ``memory_mb`` plus slack for the kernel's accounting): a
  real bound on resident memory, beyond the address-space rlimit;
* ``pids.max = 1``: the kernel itself refuses fork/clone, whatever the syscall filter does.

cgroup v1 (separate ``memory`` and ``pids`` hierarchies) and v2 (one unified hierarchy
with both controllers delegated) are supported; anything else means no cgroup layer,
reported as such. Groups are removed when their worker is reaped.

Imported by the zygote: standard library only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

#: Extra memory the cgroup allows over ``memory_mb`` (page tables, kernel accounting).
SLACK_BYTES = 32 * 1024 * 1024

# Plain os.path and file calls: this module is imported by the zygote at start-up, where
# pathlib (and what it pulls in) would be the largest import that nothing else needs.


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _mkdir(path: str) -> None:
    """Create ``path`` (its parent must exist); an existing directory is fine."""
    try:
        os.mkdir(path)
    except FileExistsError:
        if not os.path.isdir(path):
            raise


def _children(base: str, prefix: str) -> list[str]:
    try:
        return [os.path.join(base, n) for n in os.listdir(base) if n.startswith(prefix)]
    except OSError:
        return []


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, fs type, super options) of every cgroup mount."""
    out: list[tuple[str, str, set[str]]] = []
    try:
        lines = _read("/proc/self/mountinfo").splitlines()
    except OSError:
        return out
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(fields) < 5 or len(rfields) < 3 or rfields[0] not in ("cgroup", "cgroup2"):
            continue
        out.append((fields[4], rfields[0], set(rfields[2].split(","))))
    return out


def _own_paths() -> dict[str, str]:
    """Controller (or ``""`` for v2) -> this process's cgroup path."""
    paths: dict[str, str] = {}
    try:
        lines = _read("/proc/self/cgroup").splitlines()
    except OSError:
        return paths
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(",") if controllers else [""]:
            paths[c] = path
    return paths


@dataclass
class WorkerCgroups:
    """The zygote's cgroup directories; ``memory`` / ``pids`` are base directories."""

    version: int
    memory: str
    pids: str

    @classmethod
    def create(cls, name: str) -> WorkerCgroups | None:
        """Create the base groups, or return ``None`` where cgroups cannot be used.
        Groups left by zygotes that were killed (``spade-zygote-<dead pid>``) are removed."""
        made = cls._create(name)
        if made is not None:
            for base in {os.path.dirname(made.memory), os.path.dirname(made.pids)}:
                for stale in _children(base, "spade-zygote-"):
                    pid = stale.rsplit("-", 1)[-1]
                    if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                        WorkerCgroups(made.version, stale, stale).close()
        return made

    @classmethod
    def _create(cls, name: str) -> WorkerCgroups | None:
        own = _own_paths()
        mounts = _mounts()
        v1 = {opt: mp for mp, fs, opts in mounts if fs == "cgroup" for opt in opts & {"memory", "pids"}}
        try:
            if "memory" in v1 and "pids" in v1:
                mem = os.path.join(v1["memory"], own.get("memory", "/").lstrip("/"), name)
                pids = os.path.join(v1["pids"], own.get("pids", "/").lstrip("/"), name)
                _mkdir(mem)
                try:
                    _mkdir(pids)
                except OSError:
                    os.rmdir(mem)
                    raise
                return cls(1, mem, pids)
            v2 = [mp for mp, fs, _ in mounts if fs == "cgroup2"]
            if v2:
                parent = os.path.join(v2[0], own.get("", "/").lstrip("/"))
                if not {"memory", "pids"} <= set(_read(os.path.join(parent, "cgroup.controllers")).split()):
                    return None
                base = os.path.join(parent, name)
                _mkdir(base)
                _write(os.path.join(base, "cgroup.subtree_control"), "+memory +pids")
                return cls(2, base, base)
        except OSError:
            return None
        return None

    def attach(self, pid: int, memory_bytes: int, name: int | None = None) -> bool:
        """Put worker ``pid`` (as the caller's PID namespace numbers it: what
        ``cgroup.procs`` reads) in its own group ``w{name}`` (default ``pid``; the host
        pid, for a zygote in its own PID namespace) with the limits; False if that failed.
        :meth:`oom_killed` and :meth:`remove` take the name."""
        join = os.path.join
        proc_pid, pid = pid, pid if name is None else name
        try:
            if self.version == 1:
                mem, pids = join(self.memory, f"w{pid}"), join(self.pids, f"w{pid}")
                os.mkdir(mem)
                os.mkdir(pids)
                _write(join(mem, "memory.limit_in_bytes"), str(memory_bytes + SLACK_BYTES))
                _write(join(pids, "pids.max"), "1")
                _write(join(mem, "cgroup.procs"), str(proc_pid))
                _write(join(pids, "cgroup.procs"), str(proc_pid))
            else:
                group = join(self.memory, f"w{pid}")
                os.mkdir(group)
                _write(join(group, "memory.max"), str(memory_bytes + SLACK_BYTES))
                if os.path.exists(join(group, "memory.swap.max")):
                    _write(join(group, "memory.swap.max"), "0")
                _write(join(group, "pids.max"), "1")
                _write(join(group, "cgroup.procs"), str(proc_pid))
        except OSError:
            self.remove(pid)
            return False
        return True

    def oom_killed(self, pid: int) -> bool:
        """Whether the kernel's OOM killer acted in the worker's group."""
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        try:
            text = _read(os.path.join(self.memory, f"w{pid}", name))
        except OSError:
            return False
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value) > 0
        return False

    def remove(self, pid: int) -> None:
        for base in {self.memory, self.pids}:
            try:
                os.rmdir(os.path.join(base, f"w{pid}"))
            except OSError:
                pass

    def close(self) -> None:
        for base in {self.memory, self.pids}:
            for child in _children(base, "w"):
                try:
                    os.rmdir(child)
                except OSError:
                    pass
            try:
                os.rmdir(base)
            except OSError:
                pass
