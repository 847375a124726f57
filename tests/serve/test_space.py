"""``spade serve --space DIR``: the folder OpenEnv 0.10's own checks accept (``openenv
validate DIR`` at the static level, the highest that runs without Docker, its multi-mode
check and the structure check of ``openenv build``/``push``), and the server it holds runs:
a store environment carried in the folder plays over HTTP, and ``openenv validate URL``
passes it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml
from openenv.cli._cli_utils import validate_env_structure
from openenv.cli._validation import validate_multi_mode_deployment
from processes import stop, wait_healthy
from spade_serve.server import free_port
from typer.testing import CliRunner

REFERENCE_ENVS = Path(__file__).resolve().parents[1] / "core" / "fixtures" / "reference_envs"
STORE_ENV = "GuessNumber-v1"
SEED_ENV = "code_breaker-v1"


def spade(*args: str) -> tuple[int, str]:
    from spade_core.app.cli import build_app

    result = CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "200"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout + result.stderr


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("SPADE_HOME", str(h))
    monkeypatch.chdir(tmp_path)
    code, out = spade("import", str(REFERENCE_ENVS / "guess_number.py"), "--domain", "games", "--status", "admitted", "--trust")
    assert code == 0, out
    return h


def test_the_space_folder_passes_openenvs_checks_but_for_the_lock_it_was_told_to_skip(home: Path, tmp_path: Path) -> None:
    code, out = spade("serve", "--space", "./space", SEED_ENV, STORE_ENV, "--no-lock")
    assert code == 0, out
    assert "wrote an OpenEnv Space for 2 environments" in out and "no uv.lock: not asked for" in " ".join(out.split())
    space = tmp_path / "space"
    assert validate_env_structure(space) == []
    ok, issues = validate_multi_mode_deployment(space)
    assert (ok, issues) == (False, ["Missing uv.lock - run 'uv lock' to generate it"])
    manifest = yaml.safe_load((space / "openenv.yaml").read_text())
    validation = manifest.pop("validation")
    assert manifest == {
        "spec_version": 1, "name": "space", "type": "space", "runtime": "fastapi", "app": "server.app:app", "port": 8000,
    }
    assert validation["capabilities"] == {"verifier": {"kind": "reward_channel"}, "task_api": True}
    assert validation["reward"]["range"] == [0.0, 1.0] and validation["types"]["tags"] == ["spade", "games"]
    card = (space / "README.md").read_text()
    front = yaml.safe_load(card.split("---")[1])
    assert (front["sdk"], front["app_port"]) == ("docker", 8000) and "openenv" in front["tags"]
    assert f"`{STORE_ENV}`" in card and f"`{SEED_ENV}`" in card
    assert sorted(p.name for p in (space / "vendor").iterdir()) == ["games", "spade_core", "spade_sandbox", "spade_serve"]
    assert not list((space / "vendor").rglob("__pycache__")) and not list((space / "vendor").rglob("*.so"))
    import pyarrow.parquet as pq

    carried = pq.read_table(space / "environments" / "data" / "train-00000-of-00001.parquet").column("id").to_pylist()
    assert carried == [STORE_ENV], "store environments travel in the folder; seeds come with their plugin"


def test_a_non_empty_folder_is_replaced_only_when_forced(home: Path, tmp_path: Path) -> None:
    (tmp_path / "space").mkdir()
    (tmp_path / "space" / "mine.txt").write_text("keep")
    code, out = spade("serve", "--space", "./space", SEED_ENV, "--no-lock")
    assert code == 2 and "not an empty folder; pass --force" in out
    assert (tmp_path / "space" / "mine.txt").exists()
    code, out = spade("serve", "--space", "./space", SEED_ENV, "--no-lock", "--force")
    assert code == 0 and not (tmp_path / "space" / "mine.txt").exists()


@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not installed (pip install uv)")
def test_with_uv_the_lock_is_written_and_openenv_validate_passes(home: Path, tmp_path: Path) -> None:
    code, out = spade("serve", "--space", "./space", STORE_ENV)
    assert code == 0, out
    assert "no uv.lock" not in out
    assert validate_multi_mode_deployment(tmp_path / "space") == (True, [])
    lock = (tmp_path / "space" / "uv.lock").read_text()
    assert 'source = { directory = "vendor/spade_core" }' in lock and 'name = "openenv"' in lock


def openenv_validate(*args: str) -> tuple[int, dict]:
    """OpenEnv's ``openenv validate ARGS --json``: its exit status and its report."""
    done = subprocess.run(
        [sys.executable, "-m", "openenv.cli", "validate", *args, "--json"], capture_output=True, text=True, timeout=120
    )
    return done.returncode, json.loads(done.stdout)


def test_openenv_validate_passes_the_space_folder_at_the_static_level(home: Path, tmp_path: Path) -> None:
    code, out = spade("serve", "--space", "./space", SEED_ENV, STORE_ENV, "--no-lock")
    assert code == 0, out
    code, report = openenv_validate(str(tmp_path / "space"), "--level", "static")
    assert (code, report["verdict"], report["levels_run"]) == (0, "pass", [1]), report["results"]
    assert [(r["check_id"], r["status"]) for r in report["results"]] == [("static.manifest", "pass")]
    # Above static the checks build and run the Docker image: without Docker they are skipped.
    code, report = openenv_validate(str(tmp_path / "space"), "--skip-build")
    statuses = {r["check_id"]: r["status"] for r in report["results"]}
    assert (code, report["verdict"], report["levels_run"]) == (0, "warn", [1])
    assert statuses.pop("static.manifest") == "pass" and set(statuses.values()) == {"skip"}


def play_the_space(folder: Path, command: list[str], spade_home: Path) -> None:
    """Start the Space's server (``command`` in ``folder``) on a free loopback port with an
    empty SPADE_HOME, check what it serves, play one step of the carried store env, and
    run ``openenv validate`` against it at each environment's base URL."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["SPADE_HOME"] = str(spade_home)
    proc = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port)],
        cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url + "/health", proc, "the Space server", 90, poll_s=0.1)
        served = {e["id"]: e["kind"] for e in httpx.get(url + "/envs").json()["envs"]}
        assert served == {SEED_ENV: "seed", STORE_ENV: "store"}
        reset = httpx.post(f"{url}/envs/{STORE_ENV}/reset", json={"seed": 3}, timeout=30)
        assert reset.status_code == 200, reset.text
        session = reset.headers["x-spade-session"]
        assert "integer between 1 and 64" in reset.json()["observation"]["text"]
        step = httpx.post(
            f"{url}/envs/{STORE_ENV}/step", json={"action": {"message": "\\boxed{32}"}, "session_id": session}, timeout=30
        )
        assert step.status_code == 200, step.text
        body = step.json()
        assert body["observation"]["metadata"]["step_count"] == 1 and body["reward"] in (0.0, 1.0)
        for env_id in (SEED_ENV, STORE_ENV):
            code, report = openenv_validate(f"{url}/envs/{env_id}")
            assert (code, report["passed"]) == (0, True), report["criteria"]
    finally:
        stop(proc, 20)


def test_the_space_server_serves_its_store_environment_sandboxed(home: Path, tmp_path: Path) -> None:
    code, out = spade("serve", "--space", "./space", SEED_ENV, STORE_ENV, "--no-lock")
    assert code == 0, out
    play_the_space(tmp_path / "space", [sys.executable, "server/app.py"], tmp_path / "space-home")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not installed (pip install uv)")
def test_the_space_installs_from_its_own_lock_and_runs_from_its_own_environment(home: Path, tmp_path: Path) -> None:
    """What the Dockerfile does, without Docker: `uv sync --frozen` (the package index for
    the locked dependencies, vendor/ for SPADE), then the `server` script of that venv."""
    code, out = spade("serve", "--space", "./space", SEED_ENV, STORE_ENV)
    assert code == 0 and "no uv.lock" not in out, out
    space = tmp_path / "space"
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    sync = subprocess.run(
        [str(shutil.which("uv")), "sync", "--frozen", "--no-dev"], cwd=space, env=env,
        capture_output=True, text=True, timeout=600,
    )
    assert sync.returncode == 0, sync.stderr[-2000:]
    play_the_space(space, [str(space / ".venv" / "bin" / "server")], tmp_path / "space-home")


def test_all_carries_every_admitted_store_env_and_vendors_each_served_domains_plugin(home: Path, tmp_path: Path) -> None:
    code, out = spade("serve", "--space", "./space", "--all", "--no-lock")
    assert code == 0, out
    spec = json.loads((tmp_path / "space" / "space.json").read_text())
    assert STORE_ENV in spec["env_ids"] and SEED_ENV in spec["env_ids"]
    assert {"games", "tooluse"} <= {p.name for p in (tmp_path / "space" / "vendor").iterdir()}
    pyproject = (tmp_path / "space" / "pyproject.toml").read_text()
    assert 'spade-tooluse = { path = "vendor/tooluse" }' in pyproject and '"openenv>=0.10,<0.11",' in pyproject
