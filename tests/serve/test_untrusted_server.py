"""Clients of a ``spade serve`` server do not trust it with their memory: a hostile server
(its own process on loopback, ``tests/hostile_server.py``) answering far more than asked
for gets a specific error, not the client's memory."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from hostile_server import hostile_server
from spade_core.app.http_reads import AnswerTooLarge
from spade_serve.client import MAX_MESSAGE_BYTES, SpadeEnvClient
from spade_serve.gym_remote import RemoteTextEnv
from spade_serve.trl_env import TrlEnvError, TrlEnvironments


def peak_bytes_of(call: Callable[[], Any]) -> tuple[BaseException | None, int]:
    """Run ``call``; what it raised and the peak of Python memory it allocated meanwhile."""
    tracemalloc.start()
    try:
        call()
    except BaseException as exc:
        return exc, tracemalloc.get_traced_memory()[1]
    else:
        return None, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("declare", [True, False], ids=["declared", "undeclared"])
def test_a_listing_over_the_limit_is_refused_without_being_read(declare: bool) -> None:
    for chosen, route in (({"ids": ["x"]}, "/envs/x"), ({"domain": "games"}, "/envs")):  # a row, a listing page
        with hostile_server(size=64 << 20, declare=declare) as url:
            error, peak = peak_bytes_of(lambda c=chosen, u=url: TrlEnvironments(url=u, max_answer_bytes=1 << 20, **c))
        assert isinstance(error, TrlEnvError), error
        assert f"cannot list the environments of {url}: {url}{route} answered more than the 1,048,576-byte limit" \
            in str(error)
        assert peak < 8 << 20, f"{peak:,} bytes held for a 64 MiB answer of {route}"


def test_a_session_message_over_the_limit_is_refused_by_the_websocket() -> None:
    with hostile_server(kind="ws", size=64 << 20) as url:
        client = SpadeEnvClient(url, max_message_bytes=1 << 20).sync()
        client.connect()
        try:
            error, peak = peak_bytes_of(lambda: client.reset(seed=1))
        finally:
            client.close()
    assert isinstance(error, AnswerTooLarge), error
    assert str(error) == f"{url}/ws (max_message_bytes) answered more than the 1,048,576-byte limit; the answer was not read"
    assert peak < 8 << 20, f"{peak:,} bytes held for a 64 MiB message"


def test_the_default_message_limit_is_far_below_openenvs_and_reaches_remote_envs() -> None:
    assert MAX_MESSAGE_BYTES == 8 << 20
    with hostile_server(kind="ws", size=(8 << 20) + 1) as url:
        env = RemoteTextEnv(url)
        try:
            with pytest.raises(AnswerTooLarge, match="8,388,608-byte limit"):
                env.reset(seed=0)
        finally:
            env.close()
    with pytest.raises(ValueError, match="max_message_bytes must be an integer >= 1024, got 10"):
        SpadeEnvClient("http://127.0.0.1:1", max_message_bytes=10)
