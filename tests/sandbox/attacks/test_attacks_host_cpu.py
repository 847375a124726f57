"""The CPU limit cannot be switched off from inside: every rlimit is hard.

These pools give a request 1 s of CPU and a worker 2 s over its life, under a 30 s wall
deadline, so an attack that lifted the CPU limit would be stopped by the deadline ("did not
answer within") instead of the CPU limit the assertions name. With the static layer off the
environment reaches the real ``resource`` and ``signal`` modules (what the zygote already
imported); on the normal path the static layer refuses the imports.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from attack_fixtures import *  # noqa: F403 (the suite's fixtures: decoys, pools, parent checks)
from containment import assert_contained
from hostile import Attack, Outcome, env_error, static
from spade_sandbox.errors import SandboxTimeout

from spade_sandbox import SandboxLimits, SandboxPool

CPU_LIMITS = SandboxLimits(call_timeout_s=30.0, memory_mb=256, cpu_seconds=1, worker_cpu_seconds=2)
CPU_LIMIT = Outcome(SandboxTimeout, "CPU-time limit")
NOT_RAISED = env_error("ValueError: not allowed to raise maximum limit")

ATTACKS = [
    Attack(
        "lift-the-soft-cpu-limit-to-the-hard-one",
        "import resource\nsoft, hard = resource.getrlimit(resource.RLIMIT_CPU)\n"
        "resource.setrlimit(resource.RLIMIT_CPU, (hard, hard))\nwhile True:\n    pass",
        static("import"), CPU_LIMIT,
        "static; the hard RLIMIT_CPU is the worker's lifetime cap (2 s here): the kernel kills it there",
    ),
    Attack(
        "raise-the-hard-cpu-limit",
        "import resource\nresource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))",
        static("import"), NOT_RAISED,
        "static; an unprivileged process cannot raise a hard limit",
    ),
    Attack(
        "ignore-sigxcpu-and-spin",
        "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass",
        static("import"), CPU_LIMIT,
        "static; with the per-request signal ignored the kernel still kills at the hard limit",
    ),
    Attack(
        "raise-the-address-space-limit",
        "import resource\nresource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))",
        static("import"), NOT_RAISED,
        "static; RLIMIT_AS is hard",
    ),
    Attack(
        "raise-the-open-files-limit",
        "import resource\nresource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))",
        static("import"), NOT_RAISED,
        "static; RLIMIT_NOFILE is hard",
    ),
    Attack(
        "raise-the-stack-limit",
        "import resource\nsoft, hard = resource.getrlimit(resource.RLIMIT_STACK)\n"
        "resource.setrlimit(resource.RLIMIT_STACK, (soft, resource.RLIM_INFINITY) if soft != resource.RLIM_INFINITY else (soft, soft + 1))",
        static("import"), NOT_RAISED,
        "static; the limits not set explicitly are frozen at their soft value",
    ),
]


@pytest.fixture(scope="module")
def cpu_guarded_pool() -> Iterator[SandboxPool]:
    with SandboxPool(CPU_LIMITS) as p:
        yield p


@pytest.fixture(scope="module")
def cpu_os_pool() -> Iterator[SandboxPool]:
    with SandboxPool(CPU_LIMITS, unsafe_skip_static_check=True) as p:
        yield p


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_normal_path_contains(cpu_guarded_pool, decoys, attack):
    assert_contained(cpu_guarded_pool, attack, attack.guarded, decoys)


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_os_layers_alone_contain(cpu_os_pool, decoys, attack):
    assert_contained(cpu_os_pool, attack, attack.os_only, decoys)


def test_a_cpu_loop_without_tricks_stops_at_the_per_request_budget(cpu_os_pool):
    """The per-request budget still works under the hard cap: the loop is stopped by the
    worker's own SIGXCPU handling (between 1 and 2 s of CPU), well before the deadline."""
    h = cpu_os_pool.spawn("class SpinEnv:\n    def reset(self, seed=None):\n        return 'r', {}\n"
                          "    def step(self, a):\n        while True:\n            pass\n")
    with pytest.raises(SandboxTimeout, match="CPU-time limit"):
        cpu_os_pool.step(h, "spin")
