from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from spade_sandbox import SandboxLimits, SandboxPool


def open_fds() -> set[int]:
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


def home_with_stored_counter(tmp_path: Path, name: str) -> Path:
    """A ``SPADE_HOME`` whose store holds the counter environment, admitted as ``<name>-v1``."""
    from envsrc import COUNTER
    from spade_core.metadata import EnvMetadata, EnvStatus
    from spade_core.store import EnvStore

    home = tmp_path / "home"
    home.mkdir()
    with EnvStore(f"sqlite:///{home / 'store.db'}") as store:
        store.add(COUNTER, EnvMetadata(name=name, domain="games", skill="counting", max_turns=5))
        store.set_status(f"{name}-v1", EnvStatus.admitted)
    return home


def run_fresh(home: Path, script: str, env: dict[str, str] | None = None) -> Any:
    """Run ``script`` in a fresh interpreter with ``home`` as ``SPADE_HOME`` (plugins as
    installed, ``env`` added); the last line it prints, as JSON."""
    env_vars = {**os.environ, "SPADE_HOME": str(home), **(env or {})}
    env_vars.pop("SPADE_PLUGINS", None)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env_vars, cwd=home, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def sandbox_processes() -> list[psutil.Process]:
    return psutil.Process().children(recursive=True)


@pytest.fixture(scope="session", autouse=True)
def no_leaks_after_the_suite(request: pytest.FixtureRequest) -> Iterator[None]:
    """After every sandbox test: no zygote or worker process left, no descriptor leaked.

    The descriptor count is compared only when the session runs the sandbox suite alone:
    in a whole-repository run this session fixture also spans other packages' tests, whose
    session resources (database connections, shared pools) are not the sandbox's leaks.
    """
    here = Path(__file__).parent
    sandbox_only = all(Path(item.path).is_relative_to(here) for item in request.session.items)
    fds = open_fds()
    procs = {p.pid for p in sandbox_processes()}
    yield
    from spade_sandbox.default import close_process_pools

    close_process_pools()  # a test may have used the process-wide pools
    leftover = [p for p in sandbox_processes() if p.pid not in procs and p.status() != psutil.STATUS_ZOMBIE]
    assert leftover == [], f"sandbox processes left behind: {leftover}"
    if sandbox_only:
        leaked = open_fds() - fds
        assert not leaked, f"descriptors leaked: {sorted(leaked)}"


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    """A hardened pool with short deadlines, shared by one test module."""
    with SandboxPool(SandboxLimits(call_timeout_s=5.0, memory_mb=256, cpu_seconds=20)) as p:
        yield p


@pytest.fixture(scope="module")
def os_layer_pool() -> Iterator[SandboxPool]:
    """Static layer and runtime guard OFF: only the OS layers stand between the code and the host."""
    with SandboxPool(SandboxLimits(call_timeout_s=5.0, memory_mb=256), unsafe_skip_static_check=True) as p:
        yield p
