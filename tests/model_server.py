"""``transformers serve`` holding the embedded SmolLM2 model on loopback, offline: the real
OpenAI-compatible server the tests that need one talk to (the ``openai`` backend's, and
verifiers' runner against ``spade eval``)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def transformers_serve(timeout_s: float = 180) -> Iterator[tuple[str, str]]:
    """``(base URL without /v1, model id)`` of a ``transformers serve`` process holding the
    folder the transformers backend converts the shipped GGUF file into; stopped on exit.
    Raises ``RuntimeError`` with the server's last output when it exits or does not answer
    ``/health`` within ``timeout_s``."""
    from spade_designer.llm.transformers_backend import TransformersBackend, gguf_cache_root

    TransformersBackend()  # converts the shipped GGUF file once into the model cache
    folders = sorted(p.parent for p in gguf_cache_root().glob("*/config.json"))
    if not folders:
        raise RuntimeError("the transformers backend left no converted model folder")
    model_id = str(folders[0])
    cli = shutil.which("transformers", path=str(Path(sys.executable).parent)) or shutil.which("transformers")
    if not cli:
        raise RuntimeError("transformers' command line is not installed (transformers[serving])")
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.Popen([cli, "serve", model_id, "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
                raise RuntimeError(f"transformers serve exited {proc.returncode}: {out[-2000:]}")
            try:
                with urllib.request.urlopen(base + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"transformers serve did not answer /health in {timeout_s:g} s")
            time.sleep(0.5)
        yield base, model_id
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
