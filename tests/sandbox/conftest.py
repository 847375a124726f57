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
