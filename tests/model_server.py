"""``transformers serve`` holding the embedded SmolLM2 model on loopback, offline: the real
OpenAI-compatible server the tests that need one talk to (the ``openai`` backend's, and
verifiers' runner against ``spade eval``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from processes import stop, wait_healthy
from spade_serve.server import free_port


@contextmanager
def transformers_serve(timeout_s: float = 180) -> Iterator[tuple[str, str]]:
    """``(base URL without /v1, model id)`` of a ``transformers serve`` process holding the
    folder the transformers backend converts the shipped GGUF file into; stopped on exit.
    Raises ``RuntimeError`` with the server's last output when it exits or does not answer
    ``/health`` within ``timeout_s``."""
    from spade_designer.llm.transformers_backend import default_model_path, gguf_cache_root, load_model

    if not any(gguf_cache_root().glob("*/config.json")):
        # the conversion of the shipped GGUF file into this SPADE_HOME's model cache; made
        # here, not through TransformersBackend(), which reuses a model the process already
        # loaded (possibly under another test's SPADE_HOME) and then writes nothing here
        folder, gguf = default_model_path()
        load_model(folder, gguf_file=gguf, device="cpu", dtype="float32")
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
        wait_healthy(base + "/health", proc, "transformers serve", timeout_s, poll_s=0.5)
        yield base, model_id
    finally:
        stop(proc, 30)
