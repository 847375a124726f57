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
from pathlib import Path

#: Extra memory the cgroup allows over ``memory_mb`` (page tables, kernel accounting).
SLACK_BYTES = 32 * 1024 * 1024


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, fs type, super options) of every cgroup mount."""
    out: list[tuple[str, str, set[str]]] = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
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
        lines = Path("/proc/self/cgroup").read_text().splitlines()
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
    memory: Path
    pids: Path

    @classmethod
    def create(cls, name: str) -> WorkerCgroups | None:
        """Create the base groups, or return ``None`` where cgroups cannot be used.
        Groups left by zygotes that were killed (``spade-zygote-<dead pid>``) are removed."""
        made = cls._create(name)
        if made is not None:
            for base in {made.memory.parent, made.pids.parent}:
                for stale in base.glob("spade-zygote-*"):
                    pid = stale.name.rsplit("-", 1)[-1]
                    if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                        WorkerCgroups(made.version, stale, stale).close()
        return made

    @classmethod
    def _create(cls, name: str) -> WorkerCgroups | None:
        own = _own_paths()
        mounts = _mounts()
        v1 = {opt: mp for mp, fs, opts in mounts if fs == "cgroup" for opt in opts & {"memory", "pids"}}
        try:
            if "memory" in v1 and "pids" in v1:
                mem = Path(v1["memory"]) / own.get("memory", "/").lstrip("/") / name
                pids = Path(v1["pids"]) / own.get("pids", "/").lstrip("/") / name
                mem.mkdir(exist_ok=True)
                try:
                    pids.mkdir(exist_ok=True)
                except OSError:
                    mem.rmdir()
                    raise
                return cls(1, mem, pids)
            v2 = [mp for mp, fs, _ in mounts if fs == "cgroup2"]
            if v2:
                parent = Path(v2[0]) / own.get("", "/").lstrip("/")
                if not {"memory", "pids"} <= set((parent / "cgroup.controllers").read_text().split()):
                    return None
                base = parent / name
                base.mkdir(exist_ok=True)
                (base / "cgroup.subtree_control").write_text("+memory +pids")
                return cls(2, base, base)
        except OSError:
            return None
        return None

    def attach(self, pid: int, memory_bytes: int) -> bool:
        """Put worker ``pid`` in its own group with the limits; False if that failed."""
        try:
            if self.version == 1:
                mem, pids = self.memory / f"w{pid}", self.pids / f"w{pid}"
                mem.mkdir()
                pids.mkdir()
                (mem / "memory.limit_in_bytes").write_text(str(memory_bytes + SLACK_BYTES))
                (pids / "pids.max").write_text("1")
                (mem / "cgroup.procs").write_text(str(pid))
                (pids / "cgroup.procs").write_text(str(pid))
            else:
                group = self.memory / f"w{pid}"
                group.mkdir()
                (group / "memory.max").write_text(str(memory_bytes + SLACK_BYTES))
                if (group / "memory.swap.max").exists():
                    (group / "memory.swap.max").write_text("0")
                (group / "pids.max").write_text("1")
                (group / "cgroup.procs").write_text(str(pid))
        except OSError:
            self.remove(pid)
            return False
        return True

    def oom_killed(self, pid: int) -> bool:
        """Whether the kernel's OOM killer acted in the worker's group."""
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        try:
            text = (self.memory / f"w{pid}" / name).read_text()
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
                os.rmdir(base / f"w{pid}")
            except OSError:
                pass

    def close(self) -> None:
        for base in {self.memory, self.pids}:
            for child in base.glob("w*"):
                try:
                    os.rmdir(child)
                except OSError:
                    pass
            try:
                os.rmdir(base)
            except OSError:
                pass
