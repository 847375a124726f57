"""``[spade.sandbox]`` reaches the workers of ``spade serve``'s sessions, over HTTP and
WebSocket, from ``spade --config FILE`` and from the active file: an environment that
allocates past ``memory_mb`` is stopped with the sandbox's memory error; the configured
backend runs the sessions."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psutil
import pytest
from processes import stop, wait_healthy
from spade_core.config import load_config
from spade_core.metadata import EnvMetadata, EnvStatus
from spade_core.store import EnvStore
from spade_sandbox.backends import nsjail_binary
from spade_sandbox.errors import SandboxMemoryError
from spade_sandbox.launcher import SandboxLauncher
from spade_serve.catalog import EnvCatalog
from spade_serve.env_factory import SandboxEnvFactory
from spade_serve.server import free_port, running
from spade_serve.sessions import SessionManager
from spade_serve.settings import ServeSettings
from websockets.sync.client import connect

from .envs import COUNTER, served

HOG = "MemoryHog-v1"


def _home_with_hog(tmp_path: Path, source: str) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    with EnvStore(f"sqlite:///{home / 'store.db'}") as store:
        store.add(source, EnvMetadata(name="MemoryHog", domain="games", skill="eating", max_turns=3))
        store.set_status(HOG, EnvStatus.admitted)
    return home


def _http_reset_error(url: str, env: str) -> dict:
    reply = httpx.post(f"{url}/envs/{env}/reset", json={"seed": 1}, timeout=60)
    assert reply.status_code != 200, reply.text
    return reply.json()


def _ws_reset_error(url: str, env: str) -> dict:
    with connect(url.replace("http://", "ws://") + f"/envs/{env}/ws") as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
        answer = json.loads(ws.recv(timeout=60))
    assert answer["type"] == "error", answer
    return answer["data"]


def test_the_launcher_given_to_the_server_sets_its_sessions_memory(memory_hog_source: str) -> None:
    counter_like = served("hog", memory_hog_source)
    hog = dataclasses.replace(counter_like, metadata=counter_like.metadata.model_copy(update={"class_name": "MemoryHogEnv"}))
    catalog = EnvCatalog([hog])
    tight = SandboxLauncher().overridden(memory_mb=128)
    settings = ServeSettings(port=0)
    with running(SessionManager(catalog, settings, factory=SandboxEnvFactory.for_server(settings, tight))) as url:
        assert _ws_reset_error(url, hog.id)["kind"] == "memory"
        assert "memory" in json.dumps(_http_reset_error(url, hog.id))
    with running(SessionManager(catalog, settings, factory=SandboxEnvFactory.for_server(settings, SandboxLauncher()))) as url:
        with connect(url.replace("http://", "ws://") + f"/envs/{hog.id}/ws") as ws:
            ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
            assert json.loads(ws.recv(timeout=60))["type"] == "observation", "the default memory_mb lets it eat"


@contextmanager
def _spade_serve(home: Path, *args: str) -> Iterator[str]:
    port = free_port()
    cmd = [sys.executable, "-m", "spade_core.app.cli", *args, "serve", HOG, "--port", str(port), "--log-level", "warning"]
    env = {**os.environ, "SPADE_HOME": str(home)}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=home)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url + "/health", proc, "spade serve", 60, poll_s=0.05)
        yield url
    finally:
        stop(proc, 20)


@pytest.mark.parametrize("where", ["--config", "active file"])
def test_spade_serve_runs_sessions_under_the_configured_memory(
    where: str, tmp_path: Path, memory_hog_source: str, tight_sandbox_table: str
) -> None:
    home = _home_with_hog(tmp_path, memory_hog_source)
    if where == "--config":
        tight = tmp_path / "tight.toml"
        tight.write_text(f'[spade]\nhome = "{home}"\n' + tight_sandbox_table)
        args: tuple[str, ...] = ("--config", str(tight))
    else:
        (home / "spade.toml").write_text(tight_sandbox_table)
        args = ()
    with _spade_serve(home, *args) as url:
        assert _ws_reset_error(url, HOG)["kind"] == "memory"
        assert "memory" in json.dumps(_http_reset_error(url, HOG))


@pytest.mark.skipif(nsjail_binary() is None, reason="nsjail is not installed here")
def test_spade_serve_runs_sessions_in_the_configured_backend(tmp_path: Path) -> None:
    config_file = tmp_path / "nsjail.toml"
    config_file.write_text('[spade.sandbox]\nbackend = "nsjail"\n')
    launcher = SandboxLauncher.from_config(load_config(config_file))
    counter = served("counter", COUNTER)
    settings = ServeSettings(port=0)
    manager = SessionManager(EnvCatalog([counter]), settings, factory=SandboxEnvFactory.for_server(settings, launcher))
    with running(manager) as url:
        with connect(url.replace("http://", "ws://") + f"/envs/{counter.id}/ws") as ws:
            ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
            assert json.loads(ws.recv(timeout=60))["type"] == "observation"
            (session,) = manager.sessions.values()
            worker = manager.pool.worker_of(session.instance.handle)
        assert manager.pool.backend.name == "nsjail"
        assert {"rlimits", "namespaces", "landlock", "seccomp"} <= set(worker.layers)
        assert "nsjail" in {p.name() for p in psutil.Process(worker.pid).parents()}, "the worker runs inside nsjail"


@pytest.mark.parametrize("where", ["config given", "active file"])
def test_the_trl_adapter_runs_instances_under_the_configured_memory(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memory_hog_source: str, tight_sandbox_table: str
) -> None:
    from spade_serve.trl_env import TrlEnvironments

    home = _home_with_hog(tmp_path, memory_hog_source)
    monkeypatch.setenv("SPADE_HOME", str(home))
    monkeypatch.chdir(home)
    with TrlEnvironments([HOG]) as envs:
        assert envs.factory()().reset(seed=1) is not None, "the default memory_mb lets it eat"
    if where == "config given":
        tight = tmp_path / "tight.toml"
        tight.write_text(f'[spade]\nhome = "{home}"\n' + tight_sandbox_table)
        chosen = TrlEnvironments([HOG], config=load_config(tight))
    else:
        (home / "spade.toml").write_text(tight_sandbox_table)
        chosen = TrlEnvironments([HOG])
    with chosen, pytest.raises(SandboxMemoryError) as info:
        chosen.factory()().reset(seed=1)
    assert info.value.kind == "memory"
