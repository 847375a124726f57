"""``spade serve`` (every session sandboxed) beside OpenEnv's own server (the ``openenv``
package, the version installed: 0.10 here) hosting the same environment in-process, in one run.

Run: ``python -m bench.bench_serve`` (or ``python -m bench serve``); ``--quick`` for a
short run; ``--memory`` for the memory table alone (1, 16 and 64 sessions per worker), with
where it goes (the server process, the zygote, the workers; each worker's USS and PSS from
``smaps_rollup``).

Both servers run as their own processes on loopback, in one run, and are
measured one after the other in rounds (medians; the machine is shared and noisy), each through
OpenEnv's own ``GenericEnvClient`` over the WebSocket:

* **step latency** — one client stepping the seed ``polynomial_probe`` (p50 and p99 of
  the round trip, every round pooled);
* **throughput** — 32 concurrent sessions stepping at once (steps per second);
* **sessions per GiB** — 256 sessions (``--quick``: 64) opened and reset, and what they
  cost in proportional set size (PSS: shared pages split among the processes sharing
  them): every sandbox worker open afterwards, whole (the spare and the one the warm-up
  left included), plus the growth of the server process and the zygote over their idle
  PSS after the warm-up. Fixed costs are thus neither hidden in a worker started early
  nor charged to the sessions (:func:`memory_breakdown`).

OpenEnv's side is ``openenv.core.env_server.create_app`` with an ``Environment``
that wraps the same seed class through ``spade_core.env.ReferenceEnvAdapter`` (the same
value checks), ``SUPPORTS_CONCURRENT_SESSIONS`` and a session limit above the load.
``spade serve`` is run three times: one worker per session (the default), and 16 and 64
sessions per worker.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from typing import Any

import httpx
import psutil
from rich.console import Console
from rich.table import Table

ENV_ID = "polynomial_probe-v1"
ACTION = r"\boxed{query 1}"


# --- OpenEnv's own server, hosting the seed in-process ---------------------------------
def openenv_app() -> Any:
    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State
    from spade_core.app.catalog import seed_entries
    from spade_core.env import ReferenceEnvAdapter
    from spade_core.plugins import get_plugins
    from spade_core.source import instantiate, load_trusted_class

    entry = next(e for e in seed_entries(get_plugins()) if e.id == ENV_ID)
    meta = entry.metadata
    cls = load_trusted_class(entry.source(), meta.class_name, source_name=meta.id)

    class TextAction(Action):
        message: str

    class TextObservation(Observation):
        text: str = ""
        terminated: bool = False
        truncated: bool = False
        info: dict[str, Any] = {}

    class InProcessEnv(Environment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self.env = ReferenceEnvAdapter(lambda: instantiate(cls), max_turns=meta.max_turns)
            self._state = State()

        def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> TextObservation:
            text, info = self.env.reset(seed=seed)
            self._state = State(episode_id=episode_id, step_count=0)
            return TextObservation(text=text, info=info)

        def step(self, action: TextAction, timeout_s: float | None = None, **kwargs: Any) -> TextObservation:  # type: ignore[override]
            text, reward, terminated, truncated, info = self.env.step(action.message)
            self._state.step_count += 1
            return TextObservation(
                text=text, reward=reward, done=terminated or truncated, terminated=terminated, truncated=truncated, info=info
            )

        @property
        def state(self) -> State:
            return self._state

    return create_app(InProcessEnv, TextAction, TextObservation, env_name="polynomial_probe", max_concurrent_envs=1024)


def _free_port() -> int:
    from spade_serve.server import free_port

    return free_port()


@contextmanager
def server(kind: str, *extra: str):
    """Start one server process; yields ``(label, url for clients, pid)``."""
    port = _free_port()
    if kind == "openenv":
        cmd = [sys.executable, "-m", "bench.bench_serve", "--openenv-server", str(port)]
        base = f"http://127.0.0.1:{port}"
        label = "OpenEnv server (in-process)"
    else:
        cmd = [sys.executable, "-m", "spade_core.app.cli", "serve", ENV_ID, "--port", str(port), "--log-level", "warning",
               "--max-sessions-per-client", "1024", *extra]
        base = f"http://127.0.0.1:{port}/envs/{ENV_ID}"
        label = "spade serve (sandboxed" + (", " + " ".join(extra) if extra else ", 1 session/worker") + ")"
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ))
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{label} exited: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"{label} did not start")
        time.sleep(0.1)
    try:
        yield label, base, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


# --- the measurements -----------------------------------------------------------------------
async def _steps(url: str, n: int, seed: int, out: list[float]) -> None:
    from openenv.core.generic_client import GenericEnvClient

    async with GenericEnvClient(base_url=url, connect_timeout_s=60, message_timeout_s=120) as env:
        await env.reset(seed=seed)
        for _ in range(n):
            t = time.perf_counter()
            result = await env.step({"message": ACTION})
            out.append(time.perf_counter() - t)
            if result.done:
                await env.reset(seed=seed)


def latency_round(url: str, n: int) -> list[float]:
    out: list[float] = []
    asyncio.run(_steps(url, n, 1, out))
    return out[5:]  # the first steps warm the connection and the worker


def throughput_round(url: str, sessions: int, n: int) -> float:
    out: list[float] = []

    async def go() -> None:
        await asyncio.gather(*(_steps(url, n, i, out) for i in range(sessions)))

    t = time.perf_counter()
    asyncio.run(go())
    return len(out) / (time.perf_counter() - t)


def _rollup(pid: int) -> dict[str, int]:
    """``/proc/<pid>/smaps_rollup`` in bytes (Pss, Private_Dirty, ...); empty when it is gone."""
    found: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3 and parts[2] == "kB":
                    found[parts[0].rstrip(":")] = int(parts[1]) * 1024
    except OSError:
        pass
    return found


def _processes(pid: int) -> dict[str, list[dict[str, int]]]:
    """The server's processes by role, each with its smaps_rollup: ``server``, ``zygote``
    (the sandbox's zygote and the process holding its PID namespace: those with children)
    and ``workers`` (the leaves under the zygote)."""
    me = psutil.Process(pid)
    roles: dict[str, list[dict[str, int]]] = {"server": [_rollup(pid)], "zygote": [], "workers": []}
    for p in me.children(recursive=True):
        try:
            role = "zygote" if p.children() or p.ppid() == pid else "workers"
        except psutil.Error:
            continue
        roles[role].append(_rollup(p.pid))
    return roles


def memory_breakdown(url: str, pid: int, sessions: int) -> dict[str, float]:
    """Open ``sessions`` sessions (connect + reset), and say what they cost and where it
    went.

    ``per GiB`` (the headline) charges the sessions with every sandbox worker that exists
    once they are open, its whole PSS (the worker the warm-up left and the spare
    included), plus what the server process and the zygote grew by: the PSS of the whole
    process tree after, minus the server's and the zygote's PSS when idle after the
    warm-up. Fixed costs (the idle server, the zygote) are not charged, and no worker is
    left out because it existed before. Also: PSS added per role (bytes), the workers'
    count and median USS / PSS, and ``per GiB, growth`` (the tree's growth alone, which
    leaves out the workers the warm-up had already started)."""
    from openenv.core.generic_client import GenericEnvClient

    def total(roles: dict[str, list[dict[str, int]]], role: str, key: str = "Pss") -> int:
        return sum(r.get(key, 0) for r in roles[role])

    async def go() -> dict[str, float]:
        clients = [GenericEnvClient(base_url=url, connect_timeout_s=60, message_timeout_s=120) for _ in range(sessions)]
        before = _processes(pid)
        for c in clients:
            await c.connect()
            await c.reset(seed=1)
        await asyncio.sleep(0.5)
        after = _processes(pid)
        for c in clients:
            await c.close()
        workers = after["workers"]
        uss = sorted(w.get("Private_Clean", 0) + w.get("Private_Dirty", 0) for w in workers)
        pss_w = sorted(w.get("Pss", 0) for w in workers)
        added = {role: total(after, role) - total(before, role) for role in after}
        growth = sum(added.values())
        charged = sum(total(after, role) for role in after) - total(before, "server") - total(before, "zygote")
        return {
            **{f"{role} added": float(v) for role, v in added.items()},
            "workers": float(len(workers)),
            "worker USS": float(uss[len(uss) // 2]) if uss else 0.0,
            "worker PSS": float(pss_w[len(pss_w) // 2]) if pss_w else 0.0,
            "charged": float(charged),
            "per GiB": sessions / (max(charged, 1) / 2**30),
            "per GiB, growth": sessions / (max(growth, 1) / 2**30),
        }

    return asyncio.run(go())


def memory_main(sessions: int, per_worker: list[int]) -> None:
    """``--memory``: what open sessions cost, and where it goes, server by server."""
    console = Console(width=190)
    table = Table(title=f"{sessions} open sessions (connect + reset) of {ENV_ID}: memory; "
                  f"load {os.getloadavg()[0]:.1f}")
    for col in ("server", "sessions per GiB", "/ openenv", "KiB per session", "growth only: per GiB", "server process", "zygote",
                "workers", "worker count", "worker USS KiB", "worker PSS KiB"):
        table.add_column(col, justify="left" if col == "server" else "right")
    kinds = [("openenv", ())] + [("spade", ("--sessions-per-worker", str(n))) for n in per_worker]
    # One server at a time, as in main.
    base: float | None = None
    for kind, extra in kinds:
        with server(kind, *extra) as (label, url, pid):
            latency_round(url, 20)  # the first worker and the connection path warm, as in the main run
            r = memory_breakdown(url, pid, sessions)
        kib = 1024
        base = base or r["per GiB"]  # the first row: OpenEnv's server
        table.add_row(label, f"{r['per GiB']:.0f}", f"{r['per GiB'] / base:.2f}x", f"{r['charged'] / sessions / kib:.0f}", f"{r['per GiB, growth']:.0f}",
                      f"{r['server added'] / kib:.0f}",
                      f"{r['zygote added'] / kib:.0f}", f"{r['workers added'] / kib:.0f}", f"{r['workers']:.0f}",
                      f"{r['worker USS'] / kib:.0f}", f"{r['worker PSS'] / kib:.0f}")
    console.print(table)
    console.print("[dim]sessions per GiB and KiB per session: every sandbox worker open after the sessions charged its "
                  "whole PSS (the spare and the one the warm-up left included), plus the growth of the server process "
                  "and the zygote over their idle PSS after the warm-up. 'growth only': the process tree's PSS growth "
                  "alone (leaves out the workers that existed before). Server process, zygote (with its PID-namespace "
                  "holder), workers: PSS added (KiB) by role; worker count includes the spare; USS = a worker's "
                  "private pages (smaps_rollup)[/]")


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * q))] * 1000


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    quick = "--quick" in argv
    if "--memory" in argv:
        memory_main(64 if quick else 256, [1, 16, 64])
        return
    rounds, steps, conc, conc_steps, mem_sessions = (2, 200, 16, 20, 64) if quick else (4, 400, 16, 40, 256)
    console = Console(width=170)
    kinds = [("openenv", ()), ("spade", ()), ("spade", ("--sessions-per-worker", "16")),
             ("spade", ("--sessions-per-worker", "64"))]
    servers: list[tuple[str, str, int]] = []
    lat: dict[str, list[float]] = {}
    thr: dict[str, list[float]] = {}
    mem: dict[str, float] = {}
    # One server at a time: OpenEnv's server, started beside the others on this
    # 2-core machine, timed out WebSocket handshakes (a minute) in two of two tries.
    for kind, extra in kinds:
        with server(kind, *extra) as (label, url, pid):
            servers.append((label, url, pid))
            lat[label], thr[label] = [], []
            latency_round(url, 20)  # warm
            for _ in range(rounds):
                lat[label].extend(latency_round(url, steps))
            mem[label] = memory_breakdown(url, pid, mem_sessions)["per GiB"]
            # Throughput last: OpenEnv's server stopped completing WebSocket handshakes
            # after a concurrent round here, and one failure must not hide the other figures.
            for _ in range(rounds):
                try:
                    thr[label].append(throughput_round(url, conc, conc_steps))
                except Exception as exc:
                    console.print(f"[red]{label}: throughput round failed: {type(exc).__name__}: {exc}")
                    break
    base = servers[0][0]
    base_p50 = pct(lat[base], 0.5)
    from importlib.metadata import version

    table = Table(title=f"{ENV_ID} over the WebSocket (openenv {version('openenv')} GenericEnvClient); "
                        f"load {os.getloadavg()[0]:.1f}")
    for col in ("server", "p50 ms", "p99 ms", "p50 / openenv", f"steps/s ({conc} sessions)", "sessions per GiB",
                "per GiB / openenv"):
        table.add_column(col, justify="left" if col == "server" else "right")
    for label, _, _ in servers:
        p50 = pct(lat[label], 0.5)
        table.add_row(
            label,
            f"{p50:.3f}",
            f"{pct(lat[label], 0.99):.3f}",
            f"{p50 / base_p50:.2f}x",
            f"{sorted(thr[label])[len(thr[label]) // 2]:.0f}" if thr[label] else "failed",
            f"{mem[label]:.0f}",
            f"{mem[label] / mem[base]:.2f}x",
        )
    console.print(table)
    console.print(
        f"[dim]{rounds} rounds: {steps} sequential steps each (latency), {conc} sessions x "
        f"{conc_steps} steps (throughput, median round); memory: {mem_sessions} open sessions charged every sandbox "
        "worker's whole PSS plus the server's and the zygote's growth over their idle PSS (as --memory)[/]"
    )


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--openenv-server":
        import uvicorn

        uvicorn.run(openenv_app(), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        main()
