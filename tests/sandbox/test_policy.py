"""The refusal policy, ``spade sandbox check`` and backend registration."""

from __future__ import annotations

import json

import pytest
from envsrc import COUNTER
from spade_sandbox.errors import SandboxUnavailable
from typer.testing import CliRunner

from spade_sandbox import SandboxLimits, SandboxPool, sandbox_status


def test_untrusted_code_is_refused_without_seccomp_or_landlock():
    weak = SandboxLimits(seccomp=False, landlock=False)
    with SandboxPool(weak) as p:
        with pytest.raises(SandboxUnavailable, match="refusing to run untrusted code") as info:
            p.spawn(COUNTER)
        assert "allow_insecure" in str(info.value)
        assert p.workers() == []


def test_explicit_override_runs_with_the_layers_that_remain():
    weak = SandboxLimits(seccomp=False, landlock=False)
    with SandboxPool(weak, allow_insecure=True) as p:
        h = p.spawn(COUNTER)
        assert p.reset(h, 1)[0].startswith("secret")
        assert "seccomp" not in p.worker_of(h).layers and "rlimits" in p.worker_of(h).layers


def test_landlock_plus_rlimits_is_enough():
    with SandboxPool(SandboxLimits(seccomp=False)) as p:
        assert p.reset(p.spawn(COUNTER), 1)[0].startswith("secret")


def test_status_reports_every_layer_active_on_this_host():
    status = sandbox_status()
    assert status.error is None
    assert status.secure
    assert {"rlimits", "namespaces", "no_new_privs", "landlock", "seccomp"} <= set(status.active())
    assert status.landlock_abi >= 1


def test_status_names_the_private_root_and_the_pid_namespace():
    """Both are listed; where one cannot apply (a PID namespace needs a root zygote) the
    check says why instead of leaving it out."""
    status = sandbox_status()
    layers = {layer.name: layer for layer in status.layers}
    assert {"private_root", "pid_namespace"} <= set(layers)
    assert layers["private_root"].active
    if status.running_as_root:
        assert layers["pid_namespace"].active
    else:
        assert layers["pid_namespace"].detail.startswith("unavailable: unshare(CLONE_NEWPID) failed")


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(SandboxUnavailable, match="unknown sandbox backend 'nope'"):
        SandboxPool(backend="nope")


def test_backends_are_registered_through_the_hook():
    from spade_core.plugins import get_plugins

    assert "native" in get_plugins().sandbox_backends()


def test_spade_sandbox_check_command():
    from spade_core.app.cli import build_app

    result = CliRunner().invoke(build_app(), ["sandbox", "check", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["secure"] is True
    assert {layer["name"] for layer in data["layers"] if layer["active"]} >= {"seccomp", "landlock"}
    table = CliRunner().invoke(build_app(), ["sandbox", "check"])
    assert table.exit_code == 0 and "seccomp" in table.output and "untrusted code will run" in table.output
    # Which step path runs (the C extension, or why not) is part of the report.
    from spade_sandbox import native

    assert data["c_fast_path"] is native.active()
    assert ("C step fast path: active" if native.active() else "C step fast path: off") in table.output
