"""Fixtures of the serving tests: real servers on loopback (uvicorn in a thread), real
sandbox pools, OpenEnv's own clients."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import pytest
from spade_sandbox.launcher import SandboxLauncher
from spade_serve.catalog import EnvCatalog, ServedEnv
from spade_serve.env_factory import SandboxEnvFactory
from spade_serve.server import running
from spade_serve.sessions import SessionManager
from spade_serve.settings import ServeSettings

from spade_sandbox import SandboxPool

from .envs import served

Serve = Callable[..., AbstractContextManager[tuple[str, SessionManager]]]


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    """One sandbox pool per test module (its zygote boots once); short call deadline so a
    hang is killed quickly."""
    with SandboxLauncher().pool(call_timeout_s=1.5, max_idle_workers=4) as p:
        yield p


@pytest.fixture
def serve(pool: SandboxPool) -> Serve:
    """``serve(envs=[...], **settings)``: a running server; yields ``(url, manager)``. On
    exit the server shuts down and every session it opened is closed."""

    @contextmanager
    def start(envs: list[ServedEnv] | None = None, **overrides: Any) -> Iterator[tuple[str, SessionManager]]:
        catalog = EnvCatalog(envs if envs is not None else [served()])
        settings = ServeSettings(port=0, **overrides)
        manager = SessionManager(catalog, settings, factory=SandboxEnvFactory.for_server(settings, pool=pool))
        with running(manager) as url:
            yield url, manager

    return start
