"""The verifiers taskset's client does not trust the ``spade serve`` it plays through: one
answer is bounded in bytes, one request in time as a whole (headers trickled a line at a
time included), and a listing in pages, bytes and time, each with a specific error.

Before, the client read an answer whole (about 1.05 GB from one answer) with a per-read
timeout only, so a server trickling its answer held a run without end. The client needs
httpx only, so it is loaded here from its file, in SPADE's environment (no verifiers
needed); a hostile server runs in its own process (``tests/hostile_server.py``).
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hostile_server import hostile_server

CLIENT = Path(__file__).resolve().parents[2] / "integrations" / "verifiers" / "src" / "spade_verifiers" / "client.py"
GIVE_UP_S = 60.0


@pytest.fixture(scope="module")
def client() -> ModuleType:
    spec = importlib.util.spec_from_file_location("spade_verifiers_client_under_test", CLIENT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def bounded(call: Callable[[], Any], seconds: float = GIVE_UP_S) -> tuple[BaseException | None, int, float]:
    """Run ``call`` on a thread: what it raised, its peak of Python memory, its time; fails
    the test when it is still running after ``seconds``."""
    result: dict[str, Any] = {}

    def run() -> None:
        start = time.monotonic()
        tracemalloc.start()
        try:
            call()
            result["error"] = None
        except BaseException as exc:
            result["error"] = exc
        finally:
            result["peak"] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            result["took"] = time.monotonic() - start

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"the client was still reading after {seconds:g} s"
    return result["error"], result["peak"], result["took"]


@pytest.mark.parametrize("declare", [True, False], ids=["declared", "undeclared"])
def test_one_large_answer_is_refused_without_being_read(client: ModuleType, declare: bool) -> None:
    with hostile_server(size=1 << 30, declare=declare, chunk=1 << 20) as url:
        error, peak, _ = bounded(lambda: client.served_environments(url, ["x"]))
        assert isinstance(error, client.ServerRefused), error
        assert f"{url}/envs/x answered more than the 8,388,608-byte limit" in str(error)

        async def reset() -> None:
            async with client.RemoteEpisode(url, "x", max_answer_bytes=1 << 20) as episode:
                await episode.reset(1)

        error2, peak2, _ = bounded(lambda: asyncio.run(reset()))
        assert isinstance(error2, client.ServerRefused) and "1,048,576-byte limit" in str(error2), error2
    assert max(peak, peak2) < 24 << 20, f"{max(peak, peak2):,} bytes held for a 1 GiB answer"


@pytest.mark.parametrize("where", ["headers", "body"])
def test_an_answer_trickled_past_the_request_deadline_is_cut_at_it(client: ModuleType, where: str) -> None:
    """A line of headers, or a byte of body, every 0.2 s: each read is prompt, the request
    as a whole is not."""
    trickle = {"header_lines": 10_000, "size": 10} if where == "headers" else {"size": 10_000, "chunk": 1}
    with hostile_server(delay_s=0.2, **trickle) as url:
        error, _, took = bounded(lambda: client.served_environments(url, ["x"], timeout_s=1.5))
        assert isinstance(error, client.ServerUnreachable), error
        assert "within its 1.5 s deadline" in str(error) and took < 4.0, (str(error), took)

        async def step() -> None:
            async with client.RemoteEpisode(url, "x", timeout_s=1.5) as episode:
                await episode.reset(1)

        error, _, took = bounded(lambda: asyncio.run(step()))
        assert isinstance(error, client.ServerUnreachable) and took < 4.0, (error, took)


def test_a_listing_that_never_ends_is_cut_at_its_bytes_pages_and_deadline(client: ModuleType) -> None:
    with hostile_server(kind="pages", page_bytes=4 << 20) as url:
        error, peak, _ = bounded(lambda: client.served_environments(url))
    assert isinstance(error, client.ServerRefused), error
    assert f"the listing of {url} passed 67,108,864 bytes" in str(error), str(error)
    assert peak < 96 << 20, f"{peak:,} bytes held"
    with hostile_server(kind="pages", page_bytes=10) as url:
        error, _, _ = bounded(lambda: client.served_environments(url, page_size=1))
    assert isinstance(error, client.ServerRefused), error
    assert f"the listing of {url} did not end within 1000 pages" in str(error), str(error)
    with hostile_server(kind="pages", page_bytes=10, delay_s=0.3) as url:
        error, _, took = bounded(lambda: client.served_environments(url, deadline_s=2.0))
    assert isinstance(error, client.ServerUnreachable), error
    assert "passed its 2 s deadline" in str(error) and took < 4.0, (str(error), took)
