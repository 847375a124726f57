"""A ``spade serve --all`` process over a store of large environments that declare knobs,
and a flood of Task API resets it refuses: what the memory tests and
``bench.bench_serve_task_flood`` measure (each reset names another environment's knob
task, every one past the client's session limit, so each is answered 429)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from spade_core.metadata import EnvMetadata, EnvStatus
from spade_core.store import EnvStore
from spade_serve.server import free_port

#: Seven knob settings besides the one as written (two bounds of three ints, one choice).
KNOB_ENV = '''
import random


class KnobEnv:
    A = 3
    B = 3
    C = 3
    MODE = "a"
    KNOBS = {"A": (int, 1, 9), "B": (int, 1, 9), "C": (int, 1, 9), "MODE": (str, "a", "b")}

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(0, 10**9)
        return f"a {self.A} b {self.B} c {self.C} mode {self.MODE}", {}

    def step(self, action):
        return "done", 1.0, True, False, {}

    def solution(self):
        return ["x"]
'''
#: Knob settings of :data:`KNOB_ENV`, the one as written included.
SETTINGS = 8
TASKS_PER_SETTING = 1000


def knob_home(home: Path, envs: int, source_kib: int) -> list[str]:
    """A SPADE home whose store holds ``envs`` admitted copies of :data:`KNOB_ENV`, each
    padded with comments to about ``source_kib`` KiB; their ids."""
    home.mkdir(parents=True, exist_ok=True)
    ids = []
    with EnvStore(f"sqlite:///{home / 'store.db'}") as store:
        for i in range(envs):
            pad = f"# padding {i} " + "x" * 100 + "\n"
            source = KNOB_ENV + pad * (source_kib * 1024 // len(pad))
            meta = store.add(source, EnvMetadata(name=f"knobs{i}", domain="games", skill="knobs", class_name="KnobEnv",
                                                 max_turns=3))
            store.set_status(meta.id, EnvStatus.admitted)
            ids.append(meta.id)
    return ids


@contextmanager
def serve_all(home: Path, *args: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """``spade serve --all ARGS`` over ``home``'s store, as its own process."""
    from processes import stop, wait_healthy

    port = free_port()
    cmd = [sys.executable, "-m", "spade_core.app.cli", "serve", "--all", "--port", str(port), "--log-level", "error", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env={**os.environ, "SPADE_HOME": str(home)}, cwd=home)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url + "/health", proc, "spade serve", 60, poll_s=0.05)
        yield url, proc
    finally:
        stop(proc, 20)


def refused_flood(http: httpx.Client, ids: list[str], requests: int) -> dict[int, int]:
    """``requests`` resets, each of another (environment, knob setting): how many were
    answered with each status."""
    statuses: dict[int, int] = {}
    for n in range(requests):
        env_id = ids[n % len(ids)]
        setting = 1 + (n // len(ids)) % (SETTINGS - 1)
        answer = http.post(f"/envs/{env_id}/reset", json={"split": "train", "index": setting * TASKS_PER_SETTING})
        statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
    return statuses


def rss_kib(pid: int) -> tuple[int, int]:
    """The process's resident memory and its peak (``VmRSS``, ``VmHWM``), in KiB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])
