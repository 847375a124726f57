"""``spade serve`` run as its own process (the way users run it), for the load, leak and
shutdown tests: its memory, descriptors and children are then its own."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
from processes import stop, wait_healthy
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
    try:
        wait_healthy(url + "/health", proc, "spade serve", startup_timeout_s, poll_s=0.05)
        yield url, proc
    finally:
        stop(proc, 20)


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
