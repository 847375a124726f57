from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from spade_sandbox import SandboxLimits, SandboxPool


def open_fds() -> set[int]:
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


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
    from spade_sandbox import pool as pool_module

    if pool_module._default is not None:  # a test may have used the process-wide pool
        pool_module._default.close()
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
