"""The TRL adapter does not trust the server it lists: a listing that never ends is cut at
a bound on the whole listing (pages, bytes, time), each with a specific error, however
small and prompt each page is. A hostile server in its own process
(``tests/hostile_server.py``, ``kind="pages"``: well-formed pages, each with a ``next``
never answered before).

Before, each page was bounded and the listing was not: the red team's server held the
adapter for 395 pages, 1.66 GB in 25 s.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from hostile_server import hostile_server
from spade_serve.trl_env import TrlEnvError, TrlEnvironments

from .test_untrusted_server import peak_bytes_of

#: Longest a call may run here before the test calls it unbounded.
GIVE_UP_S = 60.0


def within(seconds: float, call: Callable[[], Any]) -> tuple[BaseException | None, int, float]:
    """Run ``call`` on a thread: what it raised, the peak of Python memory it allocated,
    and how long it took; fails the test when it runs past ``seconds``."""
    result: dict[str, Any] = {}

    def run() -> None:
        start = time.monotonic()
        result["error"], result["peak"] = peak_bytes_of(call)
        result["took"] = time.monotonic() - start

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still reading the listing after {seconds:g} s"
    return result["error"], result["peak"], result["took"]


def test_an_endless_listing_of_large_pages_is_cut_at_the_listings_byte_bound() -> None:
    with hostile_server(kind="pages", page_bytes=4 << 20) as url:
        error, peak, took = within(GIVE_UP_S, lambda: TrlEnvironments(url=url, domain="games"))
    assert isinstance(error, TrlEnvError), error
    assert f"the listing of {url} passed" in str(error) and "bytes" in str(error), str(error)
    assert peak < 96 << 20, f"{peak:,} bytes held"


def test_an_endless_listing_of_small_pages_is_cut_at_the_page_bound() -> None:
    with hostile_server(kind="pages", page_bytes=100) as url:
        error, _, took = within(GIVE_UP_S, lambda: TrlEnvironments(url=url, domain="games"))
    assert isinstance(error, TrlEnvError), error
    assert f"the listing of {url} passed" in str(error) and "pages" in str(error), str(error)


def test_a_listing_slower_than_its_deadline_is_cut_at_it() -> None:
    """Each page comes in 0.3 s, far within any per-request timeout; the listing as a whole
    has a deadline."""
    with hostile_server(kind="pages", page_bytes=100, delay_s=0.3) as url:
        error, _, took = within(GIVE_UP_S, lambda: TrlEnvironments(url=url, domain="games", listing_deadline_s=2.0))
    assert isinstance(error, TrlEnvError), error
    assert "2 s deadline" in str(error), str(error)
    assert took < 4.0, took
