"""Servers the tests start as processes of their own (``spade serve``, ``transformers
serve``...): wait until one answers its health URL, and stop it (SIGTERM, then SIGKILL)."""

from __future__ import annotations

import signal
import subprocess
import time
import urllib.request


def wait_healthy(url: str, proc: subprocess.Popen, what: str, timeout_s: float, *, poll_s: float = 0.2) -> None:
    """Return once ``url`` answers 200; raise ``RuntimeError`` with the process's last output
    when it exits first, or when ``timeout_s`` pass."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            raise RuntimeError(f"{what} exited {proc.returncode}: {out[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not answer {url} in {timeout_s:g} s")
        time.sleep(poll_s)


def stop(proc: subprocess.Popen, timeout_s: float = 20) -> None:
    """SIGTERM ``proc`` (if it still runs), and SIGKILL it when it has not left after ``timeout_s``."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
