"""The sandbox also works for an unprivileged user: workers then isolate themselves with a
user namespace instead of dropping to ``nobody``.

The scenario runs in a subprocess as uid/gid 65534. The interpreter may live under a
directory ``nobody`` cannot traverse (a per-user pyenv), so the subprocess keeps exactly one
capability, CAP_DAC_READ_SEARCH (read any file), which it needs only to start Python; the
sandbox sees a non-root euid and takes its non-root path.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

SCENARIO = textwrap.dedent(
    """
    import json, os
    from spade_sandbox import SandboxLimits, SandboxPool
    from spade_sandbox.errors import SandboxPolicyViolation, SandboxTimeout
    SRC = "class AEnv:\\n    def reset(self, seed=None):\\n        return 'r', {}\\n    def step(self, a):\\n        if a == 'hang':\\n            while True:\\n                pass\\n        return a, 1.0, True, False, {}\\n"
    ESC = "class BEnv:\\n    def reset(self, seed=None):\\n        return 'r', {}\\n    def step(self, a):\\n        open('/etc/hostname').read()\\n        return a, 1.0, True, False, {}\\n"
    out = {"uid": os.geteuid()}
    with SandboxPool(SandboxLimits(call_timeout_s=2)) as p:
        h = p.spawn(SRC)
        out["layers"] = p.worker_of(h).layers
        out["step"] = list(p.step(h, "hi"))
        try:
            p.step(h, "hang")
        except SandboxTimeout as exc:
            out["timeout"] = exc.kind
    with SandboxPool(SandboxLimits(call_timeout_s=2), unsafe_skip_static_check=True) as p:
        try:
            p.step(p.spawn(ESC), "x")
        except SandboxPolicyViolation as exc:
            out["escape"] = exc.kind
    print(json.dumps(out))
    """
)


def _unprivileged_command() -> list[str]:
    if os.geteuid() != 0:
        return [sys.executable, "-c", SCENARIO]
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is needed to drop to an unprivileged user")
    caps = "-all,+dac_read_search"
    return [
        setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
        f"--inh-caps={caps}", f"--ambient-caps={caps}", f"--bounding-set={caps}",
        sys.executable, "-c", SCENARIO,
    ]


def test_non_root_workers_use_a_user_namespace_and_stay_contained():
    proc = subprocess.run(_unprivileged_command(), capture_output=True, text=True, timeout=120, cwd="/")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["uid"] != 0
    assert "userns" in out["layers"] and "uid_drop" not in out["layers"]
    # The private root works in the user namespace too; a PID namespace needs the zygote
    # to be root (it is reported missing, with why, by `spade sandbox check`).
    assert {"rlimits", "namespaces", "private_root", "no_new_privs", "landlock", "seccomp"} <= set(out["layers"])
    assert out["step"] == ["hi", 1.0, True, False, {}]
    assert out["timeout"] == "timeout"
    assert out["escape"] == "policy"
