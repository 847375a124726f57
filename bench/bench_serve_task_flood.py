"""What a flood of refused Task API resets costs a ``spade serve --all`` process.

A store of ``--envs`` admitted environments, each declaring four knobs (eight knob
settings) and padded with comments to ``--source-kib`` KiB, is served with ``--all
--max-sessions-per-client 1``. A client holds its one session, then sends ``--requests``
resets, each naming another environment's knob task (``{"split": "train", "index": k *
1000}``): every one is refused 429. The table gives the server process's RSS before the
flood, its peak during it (``VmHWM``, reset through ``/proc/<pid>/clear_refs`` first) and
its RSS after it, with the answers' statuses and the wall time. The red team's flood (issue
39): 378 refused resets grew a server by 192 MiB.

``--played``: the same resets without the held session, each session closed once reset
(``DELETE /sessions/<id>``): nothing is refused, and what the server keeps of the
environments and variants played is its budget (``spade_serve.kept``: 512 entries, 64 MiB).

Run: ``python -m bench.bench_serve_task_flood`` (defaults: 54 environments of 480 KiB, 378
requests).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

KNOB_ENV = '''
class KnobEnv:
    A = 3
    B = 3
    C = 3
    MODE = "a"
    KNOBS = {"A": (int, 1, 9), "B": (int, 1, 9), "C": (int, 1, 9), "MODE": (str, "a", "b")}

    def reset(self, seed=None):
        return f"a {self.A} b {self.B} c {self.C} mode {self.MODE}", {}

    def step(self, action):
        return "done", 1.0, True, False, {}

    def solution(self):
        return ["x"]
'''
SETTINGS = 8


def make_store(home: Path, envs: int, source_kib: int) -> list[str]:
    from spade_core.metadata import EnvMetadata, EnvStatus
    from spade_core.store import EnvStore

    ids = []
    with EnvStore(f"sqlite:///{home / 'store.db'}") as store:
        for i in range(envs):
            pad = f"# padding {i} " + "x" * 100 + "\n"
            source = KNOB_ENV + pad * (source_kib * 1024 // len(pad))
            meta = store.add(source, EnvMetadata(name=f"knobs{i}", domain="games", skill="knobs", class_name="KnobEnv"))
            store.set_status(meta.id, EnvStatus.admitted)
            ids.append(meta.id)
    return ids


def status_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def flood(envs: int, source_kib: int, requests: int, played: bool = False) -> dict[str, object]:
    from spade_serve.server import free_port

    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        ids = make_store(home, envs, source_kib)
        port = free_port()
        cmd = [sys.executable, "-m", "spade_core.app.cli", "serve", "--all", "--port", str(port), "--log-level", "error",
               "--max-sessions-per-client", "1"]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env={**os.environ, "SPADE_HOME": str(home)}, cwd=home)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if httpx.get(url + "/health", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("spade serve did not start")
                time.sleep(0.1)
            with httpx.Client(base_url=url, timeout=120) as http:
                held = http.post(f"/envs/{ids[0]}/reset", json={"split": "train", "index": 0})
                if held.status_code != 200:
                    raise RuntimeError(f"the first reset failed: {held.text}")
                if played:
                    http.delete(f"/sessions/{held.headers['X-Spade-Session']}")
                time.sleep(0.5)
                before = status_kib(proc.pid, "VmRSS")
                Path(f"/proc/{proc.pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
                statuses: dict[int, int] = {}
                start = time.perf_counter()
                for n in range(requests):
                    setting = 1 + (n // len(ids)) % (SETTINGS - 1)
                    answer = http.post(f"/envs/{ids[n % len(ids)]}/reset",
                                       json={"split": "train", "index": setting * 1000})
                    statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
                    if played and answer.status_code == 200:
                        http.delete(f"/sessions/{answer.headers['X-Spade-Session']}")
                wall = time.perf_counter() - start
                time.sleep(0.5)
                return {"before": before, "peak": status_kib(proc.pid, "VmHWM"), "after": status_kib(proc.pid, "VmRSS"),
                        "statuses": statuses, "wall": wall}
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=54)
    parser.add_argument("--source-kib", type=int, default=480)
    parser.add_argument("--requests", type=int, default=378)
    parser.add_argument("--played", action="store_true", help="sessions opened and closed instead of refused")
    args = parser.parse_args(argv or [])
    result = flood(args.envs, args.source_kib, args.requests, args.played)
    what = "played (opened, reset, closed)" if args.played else "refused"
    table = Table(title=f"{args.requests} {what} Task API resets, {args.envs} environments of {args.source_kib} KiB")
    for column in ("RSS before", "peak RSS", "RSS after", "growth", "answers", "wall"):
        table.add_column(column, justify="right")
    mib = lambda kib: f"{kib / 1024:.1f} MiB"  # noqa: E731
    table.add_row(mib(result["before"]), mib(result["peak"]), mib(result["after"]),
                  mib(result["after"] - result["before"]),  # type: ignore[operator]
                  ", ".join(f"{k}: {v}" for k, v in sorted(result["statuses"].items())),  # type: ignore[attr-defined]
                  f"{result['wall']:.1f} s")
    Console().print(table)


if __name__ == "__main__":
    main(sys.argv[1:])
