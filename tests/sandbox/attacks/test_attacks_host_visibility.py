"""The host is not visible from inside: no host path to ``stat``, no host process, not the
caller's working directory, not the host's name.

Nothing here reads a file or touches a process: each attack only looks. Where the sandbox
holds, the attack finds nothing and says so by raising ``LookupError('hidden: ...')`` (the
expected outcome); where it would see the host, it returns what it saw instead, and the test
fails. With the static layer off the environment reaches the real ``os`` and ``socket``;
on the normal path the static layer refuses the imports. What hides the host: the private
root (an empty tmpfs, ``pivot_root``), the zygote's PID namespace, the UTS namespace.
"""

from __future__ import annotations

import os
import socket

import pytest
from attack_fixtures import *  # noqa: F403 (the suite's fixtures: decoys, pools, parent checks)
from containment import assert_contained
from hostile import Attack, env_error, static

from spade_sandbox import SandboxLimits, SandboxPool

HIDDEN = env_error(r"LookupError: hidden")


def _looks(body: str) -> str:
    return body + "\nreturn 'saw ' + repr(seen), 0.0, False, False, {}"


ATTACKS = [
    Attack(
        "stat-the-root-only-file",
        _looks("import os\ntry:\n    seen = os.stat('{SECRET_FILE}')\n"
               "except FileNotFoundError:\n    raise LookupError('hidden: no such file')"),
        static("import"), HIDDEN, "static; private root (the host's tree is not there to stat)",
    ),
    Attack(
        "probe-root-ssh",
        _looks("import os\nseen = [p for p in ('/root', '/root/.ssh', '/etc/passwd', '/home', '/usr') if os.path.exists(p)]\n"
               "if not seen:\n    raise LookupError('hidden: none of the host paths exists')"),
        static("import"), HIDDEN, "static; private root",
    ),
    Attack(
        "proc-of-the-parent",
        _looks("import os\ntry:\n    seen = os.stat('/proc/{PARENT_PID}')\n"
               "except FileNotFoundError:\n    raise LookupError('hidden: no /proc')"),
        static("import"), HIDDEN, "static; private root (no procfs)",
    ),
    Attack(
        "probe-host-pid-by-affinity",
        _looks("import os\ntry:\n    seen = os.sched_getaffinity({PARENT_PID})\n"
               "except ProcessLookupError:\n    raise LookupError('hidden: no such process')"),
        static("import"), HIDDEN, "static; PID namespace (host pids name no process)",
    ),
    Attack(
        "scan-every-pid",
        _looks("import os\nseen = []\nfor pid in range(1, 100_000):\n    try:\n        os.sched_getaffinity(pid)\n"
               "        seen.append(pid)\n    except OSError:\n        pass\n"
               "if {PARENT_PID} not in seen and {SLEEPER_PID} not in seen and len(seen) < 64:\n"
               "    raise LookupError(f'hidden: {len(seen)} processes, all of the sandbox')"),
        static("import"), HIDDEN, "static; PID namespace (only the zygote and its workers exist there)",
    ),
    Attack(
        "read-the-working-directory",
        _looks("import os\nseen = os.getcwd()\nif seen == '/':\n    raise LookupError('hidden: cwd is /')"),
        static("import"), HIDDEN, "static; the zygote and the worker chdir to / (the private root's)",
    ),
    Attack(
        "read-the-host-name",
        _looks("import socket\nseen = socket.gethostname()\nif seen == 'spade-sandbox':\n"
               "    raise LookupError('hidden: a neutral host name')"),
        static("import"), HIDDEN, "static; UTS namespace with its own name",
    ),
    Attack(
        "list-the-root",
        _looks("import os\ntry:\n    seen = os.listdir('/')\nexcept PermissionError:\n"
               "    raise LookupError('hidden: the empty root cannot even be listed')\n"
               "if not seen:\n    raise LookupError('hidden: the root is empty')"),
        static("import"), HIDDEN, "static; private root (empty) behind Landlock / seccomp",
    ),
]


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_normal_path_contains(guarded_pool, decoys, attack):
    assert_contained(guarded_pool, attack, attack.guarded, decoys)


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_os_layers_alone_contain(os_pool, decoys, attack):
    assert_contained(os_pool, attack, attack.os_only, decoys)


def test_the_private_root_alone_hides_the_host():
    """With Landlock and seccomp off (the two layers that deny file access), the host's
    paths are still not there: the private root stands on its own."""
    looks = (
        "import os, socket\n"
        "class LookEnv:\n    def reset(self, seed=None):\n        return 'r', {}\n"
        "    def step(self, a):\n"
        "        paths = [p for p in ('/root', '/etc/passwd', '/proc/1', '/usr', '/tmp') if os.path.exists(p)]\n"
        "        return repr((paths, sorted(os.listdir('/')), os.getcwd(), socket.gethostname(), os.getpid())), 0.0, False, False, {}\n"
    )
    limits = SandboxLimits(call_timeout_s=5.0, landlock=False, seccomp=False)
    with SandboxPool(limits, unsafe_skip_static_check=True, allow_insecure=True) as p:
        h = p.spawn(looks)
        layers = p.worker_of(h).layers
        assert "private_root" in layers and "landlock" not in layers and "seccomp" not in layers
        paths, listing, cwd, name, pid = eval(p.step(h, "look")[0])
    assert (paths, listing, cwd, name) == ([], [], "/", "spade-sandbox")
    assert name != socket.gethostname() or socket.gethostname() == "spade-sandbox"
    if "pid_namespace" in layers:
        assert pid != os.getpid() and pid < 1000  # numbered in the zygote's namespace
