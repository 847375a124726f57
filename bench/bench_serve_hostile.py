"""What a hostile client costs a ``spade serve`` process, beside a good client's cost.

For 1 and 16 sessions per worker, one ``spade serve polynomial_probe-v1`` process is
started and played, row after row, by:

* a **good** client: WebSocket sessions stepping ``\\boxed{query 1}``, a new session every
  11 steps, every session kept open;
* a **hostile** client: the same, each action the largest the sandbox takes (65,000
  four-byte characters, 260 KB of UTF-8: what a shared worker's replay log used to keep,
  with its UTF-8 copy, for every step).

Each row reports the server process's peak RSS growth over the row (``VmHWM`` after the
row, reset through ``/proc/<pid>/clear_refs`` before it, minus the RSS before it), its RSS
growth kept once the row is over, and the row's wall time. Target (issue 29): the hostile
row within 24 MiB of the good one at every setting (before the replay bound: 76 MiB kept
after 150 hostile requests at 16 per worker).

A last table: ``/health``'s answer time while 300 sockets trickle unfinished headers at a
server whose open-file limit is 256 (before the connection cap and read deadline it was
never answered).

Run: ``python -m bench.bench_serve_hostile`` (``--quick``: 60 requests a row).
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import httpx
from rich.console import Console
from rich.table import Table

ENV_ID = "polynomial_probe-v1"
GOOD = r"\boxed{query 1}"
HOSTILE = "\U0001f600" * 65_000


@contextmanager
def server(*extra: str, open_files: int | None = None) -> Iterator[tuple[str, int]]:
    from spade_serve.server import free_port

    port = free_port()
    cmd = [sys.executable, "-m", "spade_core.app.cli", "serve", ENV_ID, "--port", str(port), "--log-level", "error",
           "--max-sessions-per-client", "1024", *extra]

    def limit() -> None:
        if open_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ),
                            preexec_fn=limit)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"spade serve {' '.join(extra)} exited")
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("spade serve did not start")
            time.sleep(0.1)
        yield url, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def _status(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def play(url: str, pid: int, action: str, requests: int) -> dict[str, float]:
    """``requests`` requests of ``action`` (a new session every 11 steps, all kept open):
    the server's peak and kept RSS growth, and the wall time."""
    from websockets.sync.client import connect

    target = url.replace("http://", "ws://") + f"/envs/{ENV_ID}/ws"
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
        peak_key = "VmHWM"
    except OSError:
        peak_key = "VmRSS"
    before = _status(pid, "VmRSS")
    start = time.perf_counter()
    with ExitStack() as stack:
        sent, ws, turns = 0, None, 0
        while sent < requests:
            if ws is None or turns == 11:
                ws = stack.enter_context(connect(target, max_size=None))
                ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
                ws.recv(timeout=60)
                sent, turns = sent + 1, 0
                continue
            ws.send(json.dumps({"type": "step", "data": {"message": action}}, ensure_ascii=False))
            reply = json.loads(ws.recv(timeout=60))
            if reply["type"] != "observation":
                raise RuntimeError(f"step refused: {reply['data']}")
            sent, turns = sent + 1, turns + 1
        wall = time.perf_counter() - start
        time.sleep(0.3)
        peak = _status(pid, peak_key) - before
        kept = _status(pid, "VmRSS") - before
    return {"peak": peak, "kept": kept, "wall": wall}


def health_under_flood(sockets: int = 300, open_files: int = 256) -> tuple[float, bool]:
    """Seconds /health took while ``sockets`` sockets trickle unfinished headers at a
    server with ``open_files`` descriptors; whether it answered 200."""
    with server(open_files=open_files) as (url, _pid):
        port = int(url.rsplit(":", 1)[1])
        socks = []
        for _ in range(sockets):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(f"GET /envs HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
            socks.append(s)
        stop = threading.Event()

        def trickle() -> None:
            while not stop.is_set():
                for s in socks:
                    try:
                        s.send(b"X-More: 1\r\n")
                    except OSError:
                        pass
                stop.wait(0.5)

        thread = threading.Thread(target=trickle, daemon=True)
        thread.start()
        time.sleep(1.0)
        start = time.perf_counter()
        try:
            ok = httpx.get(url + "/health", timeout=15).status_code == 200
        except httpx.HTTPError:
            ok = False
        took = time.perf_counter() - start
        stop.set()
        thread.join()
        for s in socks:
            s.close()
        return took, ok


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    requests = 60 if "--quick" in argv else 150
    console = Console(width=150)
    table = Table(title=f"spade serve's RSS over {requests} requests of one client ({ENV_ID}); "
                  f"load {os.getloadavg()[0]:.1f}")
    for col in ("sessions per worker", "client", "peak RSS growth MiB", "kept MiB", "hostile - good (peak) MiB", "wall s"):
        table.add_column(col, justify="left" if col == "client" else "right")
    for per_worker in (1, 16):
        with server("--sessions-per-worker", str(per_worker)) as (url, pid):
            play(url, pid, GOOD, 24)  # warm: the first worker, the call threads
            good = play(url, pid, GOOD, requests)
            hostile = play(url, pid, HOSTILE, requests)
        mib = 2**20
        for name, row in (("good", good), ("hostile (65,000 x 4-byte chars)", hostile)):
            diff = f"{(hostile['peak'] - good['peak']) / mib:.1f}" if row is hostile else ""
            table.add_row(str(per_worker), name, f"{row['peak'] / mib:.1f}", f"{row['kept'] / mib:.1f}", diff,
                          f"{row['wall']:.2f}")
    console.print(table)
    took, ok = health_under_flood()
    flood = Table(title="/health while 300 sockets trickle unfinished headers (server: 256 open files)")
    flood.add_column("answered")
    flood.add_column("seconds", justify="right")
    flood.add_row("yes" if ok else "no", f"{took:.3f}")
    console.print(flood)
    console.print("[dim]peak: VmHWM after the row (reset before it) minus VmRSS before it; kept: VmRSS after the row "
                  "minus before. Target: hostile within 24 MiB of good at every setting[/]")


if __name__ == "__main__":
    main()
