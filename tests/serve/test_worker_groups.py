"""Which sandbox worker a session lands in: sessions of one client share workers up to
``sessions_per_worker``; sessions of different clients never share one (real pool, real
workers, the session manager driven directly so that clients can differ)."""

from __future__ import annotations

import asyncio

from spade_core.metadata import code_hash
from spade_serve.catalog import EnvCatalog
from spade_serve.env_factory import SandboxEnvFactory
from spade_serve.sessions import SessionManager
from spade_serve.settings import ServeSettings

from spade_sandbox import SandboxPool

from .envs import served


def test_sessions_of_different_clients_never_share_a_worker(pool: SandboxPool) -> None:
    settings = ServeSettings(port=0, sessions_per_worker=4)
    manager = SessionManager(EnvCatalog([served()]), settings, factory=SandboxEnvFactory.for_server(settings, pool=pool))

    def worker(session) -> int:  # type: ignore[no-untyped-def]
        return pool.worker_of(session.instance.handle).pid

    async def go() -> None:
        a1 = await manager.open("counter-v1", "10.0.0.1", "http")
        b1 = await manager.open("counter-v1", "10.0.0.2", "http")
        a2 = await manager.open("counter-v1", "10.0.0.1", "http")
        b2 = await manager.open("counter-v1", "10.0.0.2", "http")
        for s in (a1, a2, b1, b2):
            await manager.reset(s, seed=1)
        assert (a1.group, a2.group, b1.group, b2.group) == (0, 0, 1, 1)
        assert worker(a1) == worker(a2) and worker(b1) == worker(b2)
        assert worker(a1) != worker(b1)
        # apart by the pool's isolation key, not by a changed source: every group runs the
        # code exactly as stored (one code hash, that of the stored source)
        stored = code_hash(manager.catalog.get("counter-v1").source)
        assert {s.instance.handle.code_hash for s in (a1, a2, b1, b2)} == {stored}
        await manager.close(a1)
        await manager.close(a2)
        # the first client's group is free again: the next client to need one takes it
        c1 = await manager.open("counter-v1", "10.0.0.3", "http")
        b3 = await manager.open("counter-v1", "10.0.0.2", "http")
        assert (c1.group, b3.group) == (0, 1)
        await manager.shutdown()
        assert not manager.sessions

    asyncio.run(go())


def test_a_closed_session_leaves_the_table_only_once_its_worker_is_free(pool: SandboxPool) -> None:
    """While the close runs on its thread the session is still listed (and counted against
    the limits), so an empty table means every worker is free again."""
    settings = ServeSettings(port=0)
    manager = SessionManager(EnvCatalog([served("gone")]), settings, factory=SandboxEnvFactory.for_server(settings, pool=pool))

    async def go() -> None:
        session = await manager.open("gone-v1", "10.0.0.1", "http")
        await manager.reset(session, seed=1)
        assert pool.worker_of(session.instance.handle).instances == 1
        closing = asyncio.ensure_future(manager.close(session))
        await asyncio.sleep(0)  # the close is now waiting for its thread
        assert not closing.done() and session.closed
        assert session.id in manager.sessions
        await closing
        assert not manager.sessions and all(w.instances == 0 for w in pool.workers())
        await manager.shutdown()

    asyncio.run(go())
