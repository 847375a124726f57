"""``spade serve`` run as its own process (the way users run it), for the load, leak and
shutdown tests: its memory, descriptors and children are then its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psutil
from spade_serve.server import free_port


@contextmanager
def spade_serve(
    *args: str, startup_timeout_s: float = 60.0, open_files: int | None = None, log: Path | None = None
) -> Iterator[tuple[str, subprocess.Popen]]:
    """Start ``spade serve ARGS --port <free>`` on loopback; yields ``(url, process)``;
    on exit SIGTERM, and SIGKILL if it has not left after 20 s. ``open_files``: the
    server's open-file limit (``ulimit -n``), as a deployment might set it; ``log``: a
    file for its output instead of a pipe (a pipe nobody reads stops a server that logs
    much once it is full)."""
    port = free_port()
    cmd = [sys.executable, "-m", "spade_core.app.cli", "serve", *args, "--port", str(port), "--log-level", "warning"]

    def limit_files() -> None:
        if open_files is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

    out = open(log, "wb") if log is not None else subprocess.PIPE
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ), preexec_fn=limit_files)
    if log is not None:
        out.close()  # type: ignore[union-attr]
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + startup_timeout_s
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"spade serve exited: {proc.stdout.read().decode() if proc.stdout else ''}")
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("spade serve did not start")
            time.sleep(0.05)
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def footprint(pid: int) -> dict[str, int]:
    """The server's resident memory, its descriptors, and its children (sandbox workers and
    the zygote) with their unique memory."""
    me = psutil.Process(pid)
    kids = me.children(recursive=True)
    uss = 0
    for kid in kids:
        try:
            uss += kid.memory_full_info().uss
        except psutil.Error:
            pass
    return {
        "rss": me.memory_info().rss,
        "uss": me.memory_full_info().uss,
        "fds": me.num_fds(),
        "children": len(kids),
        "children_uss": uss,
    }
