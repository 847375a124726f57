"""The nsjail and bwrap backends: the same zygote and workers inside an outer jail."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from envsrc import COUNTER, step_body
from spade_sandbox.backends import nsjail_binary
from spade_sandbox.errors import SandboxPolicyViolation, SandboxTimeout

from spade_sandbox import SandboxLimits, SandboxPool

AVAILABLE = {"nsjail": nsjail_binary() is not None, "bwrap": shutil.which("bwrap") is not None}


@pytest.fixture(params=["nsjail", "bwrap"])
def backend(request) -> str:
    if not AVAILABLE[request.param]:
        pytest.skip(f"{request.param} is not installed here")
    return request.param


def test_runs_environments_with_all_inner_layers(backend: str):
    with SandboxPool(SandboxLimits(call_timeout_s=2), backend=backend) as p:
        h = p.spawn(COUNTER)
        assert p.reset(h, seed=2)[0].startswith("secret ")
        assert p.step(h, "win")[2] is True
        worker = p.worker_of(h)
        assert {"rlimits", "namespaces", "no_new_privs", "landlock", "seccomp"} <= set(worker.layers)
        # The outer jail has its own PID namespace: the worker has a second, inner pid.
        nspid = Path(f"/proc/{worker.pid}/status").read_text().split("NSpid:")[1].splitlines()[0].split()
        assert len(nspid) >= 2 and int(nspid[0]) == worker.pid


def test_timeouts_kill_the_worker_inside_the_jail(backend: str):
    with SandboxPool(SandboxLimits(call_timeout_s=1), backend=backend) as p:
        h = p.spawn(step_body("while True:\n    pass", name="HangEnv"))
        with pytest.raises(SandboxTimeout):
            p.step(h, "go")
        assert p.reset(p.spawn(COUNTER), seed=1)[0].startswith("secret ")


def test_os_layers_still_stop_file_access(backend: str):
    with SandboxPool(SandboxLimits(call_timeout_s=2), backend=backend, unsafe_skip_static_check=True) as p:
        h = p.spawn(step_body("open('/etc/passwd').read()", name="ReadEnv"))
        with pytest.raises(SandboxPolicyViolation):
            p.step(h, "read")
