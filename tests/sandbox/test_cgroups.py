"""Per-worker cgroups: memory and pids limits set by the kernel, removed with the worker."""

from __future__ import annotations

from pathlib import Path

import pytest
from envsrc import COUNTER, step_body
from spade_sandbox.cgroups import WorkerCgroups
from spade_sandbox.errors import EnvCodeError

from spade_sandbox import SandboxLimits, SandboxPool

probe = WorkerCgroups.create("spade-test-probe")
if probe is None:
    pytest.skip("no writable memory+pids cgroup hierarchy here", allow_module_level=True)
probe.close()


def _groups(pid: int) -> dict[str, str]:
    out = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(","):
            out[c] = path
    return out


def _groups_of_zygote(pid: int) -> list[Path]:
    return list(Path("/sys/fs/cgroup").glob(f"**/spade-zygote-{pid}"))


def test_each_worker_gets_its_own_limited_group_removed_on_close():
    with SandboxPool(SandboxLimits(memory_mb=200)) as p:
        a, b = p.spawn(COUNTER), p.spawn(COUNTER + "\n# other\n")
        zygote = p.backend._zygote.pid
        assert _groups_of_zygote(zygote)
        wa, wb = p.worker_of(a), p.worker_of(b)
        assert "cgroup" in wa.layers
        ga, gb = _groups(wa.pid), _groups(wb.pid)
        assert ga["pids"].endswith(f"/w{wa.pid}") and gb["pids"].endswith(f"/w{wb.pid}")
        if "memory" in ga:  # cgroup v1
            mem = next(Path("/sys/fs/cgroup/memory").glob(f"**/w{wa.pid}"))
            assert int((mem / "memory.limit_in_bytes").read_text()) >= 200 * 2**20
            pids = next(Path("/sys/fs/cgroup/pids").glob(f"**/w{wa.pid}"))
            assert (pids / "pids.max").read_text().strip() == "1"
    assert _groups_of_zygote(zygote) == []


def test_pids_limit_stops_fork_even_without_the_syscall_filter():
    with SandboxPool(SandboxLimits(seccomp=False), unsafe_skip_static_check=True) as p:
        h = p.spawn(step_body("import os\nos.fork()", name="ForkEnv"))
        with pytest.raises(EnvCodeError, match="Resource temporarily unavailable"):
            p.step(h, "fork")
        assert p.worker_of(h).instances == 1  # the worker lives on, childless
