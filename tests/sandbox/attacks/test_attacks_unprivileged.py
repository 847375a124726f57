"""A representative subset of the attacks, run by an unprivileged user.

As root the workers drop to ``nobody``; as any other user they isolate themselves in a
user namespace instead, so the containment must be checked on that path too. The attacks
run in a subprocess as uid/gid 65534 — the same uid as the bystander process, so a
``kill`` or ``ptrace`` that got through would reach it. As in ``tests/sandbox/
test_unprivileged.py`` the subprocess keeps CAP_DAC_READ_SEARCH only to start Python from
a directory ``nobody`` may not traverse; the workers lose it in their user namespace,
which the root-only-file attack checks.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
import test_attacks_files as files
import test_attacks_interpreter as interpreter
import test_attacks_network as network
import test_attacks_processes as processes
import test_attacks_resources as resources
from attack_fixtures import *  # noqa: F403 (the suite's fixtures: decoys, pools, parent checks)
from containment import ATTACK_LIMITS, Decoys

SUBSET = {
    files: ["read-root-only-file", "write-canary", "os-open-low-level"],
    network: ["tcp-connect-loopback-listener", "unix-socket-path-listener"],
    processes: ["fork", "execve-shell", "kill-the-bystander", "ptrace-attach-parent"],
    interpreter: ["dataclasses-sys", "operator-attrgetter-dunder", "generator-frame-walk"],
    resources: ["cpu-loop", "memory-bomb", "regex-nested-quantifier"],
}

RUNNER = textwrap.dedent(
    """
    import json, os, sys
    from spade_sandbox import SandboxLimits, SandboxPool
    from spade_sandbox.errors import SandboxError
    todo = json.load(sys.stdin)
    limits = SandboxLimits.model_validate(todo["limits"])
    out = {"uid": os.geteuid(), "results": []}
    for guarded in (True, False):
        with SandboxPool(limits, unsafe_skip_static_check=not guarded) as pool:
            for item in todo["attacks"]:
                row = {"id": item["id"], "guarded": guarded, "error": None, "message": "", "result": None}
                try:
                    h = pool.spawn(item["source"])
                    row["layers"] = list(pool.worker_of(h).layers)
                    row["result"] = list(pool.reset(h, seed=0))
                    row["result"] = list(pool.step(h, "attack"))
                except SandboxError as exc:
                    row["error"], row["message"] = type(exc).__name__, str(exc)[:2000]
                out["results"].append(row)
    print(json.dumps(out))
    """
)


def _as_nobody(code: str) -> list[str]:
    if os.geteuid() != 0:
        return [sys.executable, "-c", code]
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is needed to drop to an unprivileged user")
    caps = "-all,+dac_read_search"
    return [
        setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
        f"--inh-caps={caps}", f"--ambient-caps={caps}", f"--bounding-set={caps}",
        sys.executable, "-c", code,
    ]


def test_attacks_are_contained_for_an_unprivileged_user(decoys: Decoys):
    attacks = {a.id: a for module, ids in SUBSET.items() for a in module.ATTACKS if a.id in ids}
    assert len(attacks) == sum(len(ids) for ids in SUBSET.values())
    request = {
        "limits": ATTACK_LIMITS.model_dump(),
        "attacks": [{"id": a.id, "source": a.source(**decoys.fields())} for a in attacks.values()],
    }
    proc = subprocess.run(
        _as_nobody(RUNNER), input=json.dumps(request), capture_output=True, text=True, timeout=300, cwd="/"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert decoys.secret not in proc.stdout
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["uid"] != 0
    assert len(out["results"]) == 2 * len(attacks)
    for row in out["results"]:
        attack = attacks[row["id"]]
        expected = attack.guarded if row["guarded"] else attack.os_only
        where = f"{row['id']} ({'normal path' if row['guarded'] else 'OS layers alone'})"
        if expected.error is None:
            assert row["error"] in (None, "SandboxPolicyViolation", "EnvCodeError"), where
        else:
            assert row["error"] == expected.error.__name__, f"{where}: {row}"
        if "layers" in row:
            assert "userns" in row["layers"] and "uid_drop" not in row["layers"], where
            assert {"landlock", "seccomp", "rlimits"} <= set(row["layers"]), where
    assert decoys.untouched() == []
