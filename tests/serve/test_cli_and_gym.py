"""``spade serve`` as users run it (its own process, graceful shutdown closing every
worker), what it refuses, and the Gymnasium wrapper around a remote session."""

from __future__ import annotations

import signal
import time

import gymnasium as gym
import httpx
import psutil
import pytest
from spade_core.app.catalog import seed_entries
from spade_core.app.cli import build_app
from spade_core.env import ReferenceEnvAdapter
from spade_core.plugins import get_plugins
from spade_core.source import instantiate, load_trusted_class
from typer.testing import CliRunner

import spade_serve  # registers spade/remote

from .subprocess_server import spade_serve as spade_serve_process

SEED = "polynomial_probe-v1"


def test_sigterm_closes_every_session_and_worker_and_exits() -> None:
    with spade_serve_process(SEED) as (url, proc):
        with httpx.Client(base_url=url) as http:
            for seed in range(3):
                assert http.post("/reset", json={"seed": seed}).status_code == 200
            assert http.get("/status").json()["sessions"] == 3
        kids = psutil.Process(proc.pid).children(recursive=True)
        assert len(kids) >= 3  # the sessions' workers and the zygote
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        # uvicorn shuts down (the lifespan closes every session, worker and the zygote),
        # then re-raises the signal it caught, so the exit status is SIGTERM's
        assert proc.wait(timeout=20) in (0, -signal.SIGTERM)
        took = time.monotonic() - start
    _, alive = psutil.wait_procs(kids, timeout=10)
    assert alive == [], f"left running after shutdown: {[p.pid for p in alive]}"
    assert took < 10


def test_serve_refuses_what_it_cannot_serve() -> None:
    runner = CliRunner()
    app = build_app()
    nothing = runner.invoke(app, ["serve"])
    assert nothing.exit_code != 0 and "--domain" in nothing.output
    unknown = runner.invoke(app, ["serve", "no_such_env-v9"])
    assert unknown.exit_code == 2 and "no_such_env-v9" in unknown.output
    bad = runner.invoke(app, ["serve", SEED, "--max-sessions", "2", "--max-sessions-per-client", "3"])
    assert bad.exit_code == 2 and "max_sessions_per_client" in bad.output
    assert "Traceback" not in unknown.output + bad.output


def test_serve_lists_a_whole_domain() -> None:
    domain = next(e.metadata.domain for e in seed_entries(get_plugins()) if e.id == SEED)
    expected = {e.id for e in seed_entries(get_plugins(), domain=domain)}
    with spade_serve_process("--domain", domain) as (url, _):
        listed = {e["id"] for e in httpx.get(url + "/envs").json()["envs"]}
    assert listed == expected


def _local(env_id: str) -> ReferenceEnvAdapter:
    entry = next(e for e in seed_entries(get_plugins()) if e.id == env_id)
    m = entry.metadata
    cls = load_trusted_class(entry.source(), m.class_name, source_name=m.id)
    return ReferenceEnvAdapter(lambda: instantiate(cls), max_turns=m.max_turns, reward_range=m.reward_range)


@pytest.fixture(scope="module")
def server_url():
    with spade_serve_process(SEED) as (url, _):
        yield url


def test_gym_make_spade_remote_plays_like_the_local_environment(server_url: str) -> None:
    assert spade_serve.REMOTE_ENV_ID in gym.registry
    remote = gym.make("spade/remote", url=server_url, env_id=SEED)
    local = _local(SEED)
    try:
        for seed in (0, 5):
            assert remote.reset(seed=seed) == local.reset(seed=seed)
            for action in (r"\boxed{query 1}", r"\boxed{query -2}", r"\boxed{answer 1 2 3}"):
                got, want = remote.step(action), local.step(action)
                assert got == want
                if got[2] or got[3]:
                    break
    finally:
        remote.close()
        local.close()


def test_a_remote_env_passes_gymnasiums_checker(server_url: str) -> None:
    from gymnasium.utils.env_checker import check_env

    env = gym.make("spade/remote", url=server_url, env_id=SEED)
    try:
        check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()
