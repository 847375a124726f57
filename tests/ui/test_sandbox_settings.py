"""The ui's play (``spade serve``'s app at ``/play``) runs its sessions under the
configuration's ``[spade.sandbox]``: an environment that allocates past ``memory_mb`` at
reset is answered with the sandbox's memory error."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
from spade_core.config import load_config
from spade_core.metadata import EnvMetadata, EnvStatus
from spade_core.plugins import get_plugins
from spade_core.store import EnvStore


def test_the_ui_plays_under_the_configured_memory(tmp_path: Path, memory_hog_source: str, tight_sandbox_table: str) -> None:
    import uvicorn
    from spade_serve.server import free_port

    from spade_ui import UiSettings, create_ui_app

    url = f"sqlite:///{tmp_path / 'store.db'}"
    with EnvStore(url) as store:
        store.add(memory_hog_source, EnvMetadata(name="MemoryHog", domain="games", skill="eating", max_turns=2))
        store.set_status("MemoryHog-v1", EnvStatus.admitted)
    tight = tmp_path / "tight.toml"
    tight.write_text(tight_sandbox_table)
    port = free_port()
    app = create_ui_app(load_config(tight, store_url=url), get_plugins(), UiSettings(port=port, runs_dir=tmp_path))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the ui server did not start"
            time.sleep(0.02)
        reply = httpx.post(f"http://127.0.0.1:{port}/play/envs/MemoryHog-v1/reset", json={"seed": 1}, timeout=60)
        assert reply.status_code != 200 and reply.json()["data"]["kind"] == "memory", reply.text
    finally:
        server.should_exit = True
        thread.join(timeout=30)
