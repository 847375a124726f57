"""Load on loopback with OpenEnv's own client: many concurrent WebSocket sessions,
every step answered, nothing left behind (sessions, workers, descriptors, memory). The big
run (256 sessions x 200 steps) is marked slow; a small one always runs. Both are bounded
in count and time and stop by themselves."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from openenv.core.generic_client import GenericEnvClient

from .subprocess_server import footprint, spade_serve

ACTION = r"\boxed{query 1}"


async def _session(url: str, steps: int, seed: int, latencies: list[float]) -> int:
    """One client: reset, then ``steps`` steps (a new episode whenever one ends); the
    number of steps answered."""
    answered = 0
    async with GenericEnvClient(base_url=url, message_timeout_s=120) as env:
        await env.reset(seed=seed)
        for _ in range(steps):
            start = time.perf_counter()
            result = await env.step({"message": ACTION})
            latencies.append(time.perf_counter() - start)
            answered += 1
            assert isinstance(result.observation["text"], str)
            if result.done:
                await env.reset(seed=seed)
    return answered


def run_load(url: str, sessions: int, steps: int) -> dict[str, float]:
    latencies: list[float] = []

    async def go() -> list[int]:
        return await asyncio.gather(*(_session(url, steps, i, latencies) for i in range(sessions)))

    start = time.perf_counter()
    answered = asyncio.run(asyncio.wait_for(go(), timeout=600))
    wall = time.perf_counter() - start
    assert answered == [steps] * sessions
    latencies.sort()
    return {
        "wall_s": wall,
        "steps_per_s": sessions * steps / wall,
        "p50_ms": latencies[len(latencies) // 2] * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99)] * 1000,
    }


def settle(url: str, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status = httpx.get(url + "/status").json()
        if status["sessions"] == 0 or time.monotonic() > deadline:
            return status
        time.sleep(0.05)


def quiet_footprint(pid: int, most_children: int, timeout: float = 60.0) -> dict[str, int]:
    """The server's footprint once the workers of closed sessions have been shut down
    (the pool retires them past its warm cap after the sessions close; reaping hundreds
    takes a moment), or as it is at the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        now = footprint(pid)
        if now["children"] <= most_children or time.monotonic() > deadline:
            return now
        time.sleep(0.2)


def check_load_leaves_nothing(sessions: int, steps: int, *extra: str) -> dict[str, float]:
    env = "polynomial_probe-v1"
    args = (env, "--max-sessions-per-client", str(max(sessions, 1)), "--max-sessions", str(max(sessions, 1)), *extra)
    with spade_serve(*args) as (url, proc):
        env_url = f"{url}/envs/{env}"
        run_load(env_url, 4, 5)  # warm: the zygote and the first workers exist
        settle(url)
        before = footprint(proc.pid)
        numbers = run_load(env_url, sessions, steps)
        status = settle(url)
        after_first = quiet_footprint(proc.pid, 16 + 3)
        run_load(env_url, sessions, max(5, steps // 10))  # a second round must not grow anything
        settle(url)
        after = quiet_footprint(proc.pid, after_first["children"])
    assert status["sessions"] == 0 and status["pending_calls"] == 0
    # Workers whose sessions closed stay warm up to the server's cap (16), and the second
    # round reuses them instead of adding more. Besides workers, the server's children are
    # the zygote's own processes (at most 3 here: its namespaces' init and the forker).
    assert after_first["children"] <= 16 + 3, after_first
    assert after["children"] <= after_first["children"], (after_first, after)
    assert after["fds"] <= after_first["fds"] + 4, (after_first, after)
    assert after["rss"] - after_first["rss"] < 64 << 20, (after_first, after)
    numbers.update(
        rss_before_mib=before["rss"] / 2**20,
        rss_after_mib=after["rss"] / 2**20,
        fds_before=before["fds"],
        fds_after=after["fds"],
    )
    return numbers


#: A worker per session (the default), and sessions sharing workers 16 to one.
WORKERS = pytest.mark.parametrize("extra", [(), ("--sessions-per-worker", "16")], ids=["own-worker", "16-per-worker"])


@WORKERS
def test_concurrent_websocket_sessions_all_answered_and_nothing_leaks(extra: tuple[str, ...]) -> None:
    numbers = check_load_leaves_nothing(24, 40, *extra)
    print(f"\n24 sessions x 40 steps {extra}: {numbers}")


@pytest.mark.slow
@WORKERS
def test_256_websocket_sessions_x_200_steps_no_error_no_leak(extra: tuple[str, ...]) -> None:
    numbers = check_load_leaves_nothing(256, 200, *extra)
    print(f"\n256 sessions x 200 steps {extra}: {numbers}")
