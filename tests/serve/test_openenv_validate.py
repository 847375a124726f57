"""``openenv validate`` (OpenEnv 0.10's own CLI) against ``spade serve`` run as users run
it: its runtime probe of a running server (OpenAPI, health, metadata, schema, MCP, the
simulation-mode routes) at the root of a server of one environment and at every
``/envs/<id>`` base URL of a server of several. The Space folder's validation is in
``test_space.py``."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx

from .subprocess_server import spade_serve as spade_serve_process


def openenv_validate(*args: str) -> tuple[int, dict]:
    """``openenv validate ARGS --json``: its exit status and its report."""
    done = subprocess.run(
        [sys.executable, "-m", "openenv.cli", "validate", *args, "--json"], capture_output=True, text=True, timeout=120
    )
    return done.returncode, json.loads(done.stdout)


def failed(report: dict) -> list[str]:
    return [c["id"] if "id" in c else str(c) for c in report["criteria"] if not c["passed"]]


def test_openenv_validate_passes_a_server_of_one_environment() -> None:
    with spade_serve_process("code_breaker-v1") as (url, _):
        code, report = openenv_validate(url)
    assert (code, report["passed"], report["mode"]) == (0, True, "simulation"), failed(report)
    assert len(report["criteria"]) == 6


def test_openenv_validate_passes_each_environment_of_a_server_at_its_own_base_url() -> None:
    with spade_serve_process("code_breaker-v1", "polynomial_probe-v1") as (url, _):
        for env_id in ("code_breaker-v1", "polynomial_probe-v1"):
            code, report = openenv_validate(f"{url}/envs/{env_id}")
            assert (code, report["passed"], report["mode"]) == (0, True, "simulation"), (env_id, failed(report))
        api = httpx.get(f"{url}/envs/code_breaker-v1/openapi.json").json()
        assert api["servers"] == [{"url": "/envs/code_breaker-v1"}] and "/reset" in api["paths"] and "/{env_name}/splits" in api["paths"]
        assert httpx.get(f"{url}/envs/nothing-v1/health").status_code == 404
        code, report = openenv_validate(f"{url}/envs/nothing-v1")
        assert code == 1 and not report["passed"]
