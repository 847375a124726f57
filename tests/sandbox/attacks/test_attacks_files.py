"""Files: the root-only file, the parent's environment, a canary in a world-writable
directory. The static layer refuses ``open``/``os``; without it Landlock (deny-all
filesystem) and the seccomp filter (``open*`` fail with EPERM) stop every access."""

from __future__ import annotations

import pytest
from attack_fixtures import *  # noqa: F403 (the suite's fixtures: decoys, pools, parent checks)
from containment import assert_contained
from hostile import POLICY, QUIET, Attack, static

ATTACKS = [
    Attack("read-root-only-file", 'return open("{SECRET_FILE}").read(), 0.0, False, False, {}',
           static("builtin"), POLICY, "static; landlock fs + seccomp open=EPERM + uid nobody"),
    Attack("read-parent-proc-environ", 'return open("/proc/{PARENT_PID}/environ").read(), 0.0, False, False, {}',
           static("builtin"), POLICY, "static; landlock fs + seccomp"),
    Attack("read-proc-1-environ", 'return open("/proc/1/environ", "rb").read().decode(), 0.0, False, False, {}',
           static("builtin"), POLICY, "static; landlock fs + seccomp"),
    Attack("own-os-environ", "import os\nreturn repr(dict(os.environ)), 0.0, False, False, {}",
           static("import"), QUIET, "static; zygote starts with an empty environment"),
    Attack("os-open-low-level",
           'import os\nfd = os.open("{SECRET_FILE}", os.O_RDONLY)\nreturn os.read(fd, 200).decode(), 0.0, False, False, {}',
           static("import"), POLICY, "static; seccomp openat=EPERM"),
    Attack("write-canary", 'open("{CANARY}", "w").write("escaped")',
           static("builtin"), POLICY, "static; landlock fs + seccomp"),
    Attack("symlink-secret-to-canary", 'import os\nos.symlink("{SECRET_FILE}", "{CANARY}")',
           static("import"), POLICY, "static; seccomp symlink=EPERM"),
    Attack("chmod-root-only-file", 'import os\nos.chmod("{SECRET_FILE}", 0o666)',
           static("import"), POLICY, "static; seccomp chmod=EPERM + uid nobody"),
    Attack("list-host-root", "import os\nreturn repr(os.listdir('/')), 0.0, False, False, {}",
           static("import"), POLICY, "static; landlock fs + seccomp"),
    Attack("pathlib-read", 'import pathlib\nreturn pathlib.Path("{SECRET_FILE}").read_text(), 0.0, False, False, {}',
           static("import"), POLICY, "static; landlock fs + seccomp"),
    Attack("io-open-read", 'import io\nreturn io.open("{SECRET_FILE}").read(), 0.0, False, False, {}',
           static("import"), POLICY, "static; landlock fs + seccomp"),
]


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_normal_path_contains(guarded_pool, decoys, attack):
    assert_contained(guarded_pool, attack, attack.guarded, decoys)


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_os_layers_alone_contain(os_pool, decoys, attack):
    assert_contained(os_pool, attack, attack.os_only, decoys)
