"""Sessions: one environment instance per client episode stream, and the limits around them.

A :class:`SessionManager` owns every open session of a server, the sandbox pool their
instances live in, and the bounded thread pool environment calls run on. It is used from
one asyncio event loop (the web app's); blocking work (spawning a worker, a sandboxed
``step``) runs on the call threads, admitted by a :class:`CallGate` that answers
:class:`~spade_serve.errors.ServerBusy` at once when every thread and queue place is
taken.

Which worker a session's instance lives in: sessions of one environment *and one
client* are grouped ``sessions_per_worker`` to a worker; sessions of different clients
never share a worker process (nor the environment's module and class state), whatever
``sessions_per_worker`` is. The pool keys workers by code version, so group ``k > 0``
runs the source with a trailing comment naming the group (same behaviour, a distinct code
hash); group 0 is the code as stored. A worker killed for a hang, a crash or its memory
limit therefore ends the sessions of its group only.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from spade_core.env import ReferenceEnvAdapter, TextEnv
from spade_core.errors import SpadeError
from spade_core.source import instantiate, load_trusted_class

from .catalog import EnvCatalog, ServedEnv
from .errors import (
    CapacityReached,
    EnvFailed,
    EpisodeStateError,
    InvalidRequest,
    ServeError,
    ServerBusy,
    SessionNotFound,
)
from .models import SpadeObservation, SpadeState
from .settings import ServeSettings

if TYPE_CHECKING:
    from spade_sandbox.pool import SandboxPool

T = TypeVar("T")

#: Sandbox error kinds after which the worker is gone (spade_sandbox.errors): the session
#: cannot go on, so it is closed and the client told ``session_closed``.
_FATAL_KINDS = frozenset({"timeout", "memory", "crash", "policy", "unavailable"})


class CallGate:
    """A fixed set of call threads with a bounded queue in front.

    ``run`` counts the call in before submitting it; with ``threads + queue`` calls
    already admitted it raises :class:`ServerBusy` instead of queueing. Used from one
    event loop only, so the counter needs no lock.
    """

    def __init__(self, threads: int, queue: int) -> None:
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="spade-serve-call")
        self.capacity = threads + queue
        self.pending = 0

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        if self.pending >= self.capacity:
            raise ServerBusy(
                f"the server is at capacity ({self.pending} environment calls running or queued); retry shortly",
                pending=self.pending,
            )
        self.pending += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)
        finally:
            self.pending -= 1

    def shutdown(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)


@dataclass(eq=False)
class Session:
    """One client's environment instance and its episode."""

    id: str
    env: ServedEnv
    client: str
    transport: str
    instance: TextEnv
    group: int | None
    created: float
    last_active: float
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    episode_id: str | None = None
    seed: int | None = None
    step_count: int = 0
    started: bool = False
    terminated: bool = False
    truncated: bool = False
    total_reward: float = 0.0
    closed: bool = False
    #: Called when the server ends the session on its own (idle, shutdown): closes the
    #: WebSocket of a WebSocket session.
    on_server_close: Callable[[str], Awaitable[None]] | None = None

    def state(self) -> SpadeState:
        return SpadeState(
            episode_id=self.episode_id,
            step_count=self.step_count,
            env_id=self.env.id,
            session_id=self.id,
            seed=self.seed,
            terminated=self.terminated,
            truncated=self.truncated,
            total_reward=self.total_reward,
        )


def _group_source(source: str, group: int) -> str:
    return source if group == 0 else f"{source}\n# spade-serve worker group {group}\n"


class SessionManager:
    """Every open session of one server; see the module docstring."""

    def __init__(self, catalog: EnvCatalog, settings: ServeSettings, *, pool: SandboxPool | None = None) -> None:
        self.catalog = catalog
        self.settings = settings
        self._pool = pool
        self._own_pool = pool is None
        self.gate = CallGate(settings.max_concurrent_calls, settings.max_queued_calls)
        self.sessions: dict[str, Session] = {}
        self._per_client: dict[str, int] = {}
        #: env id -> group -> [the client whose sessions it holds, how many]
        self._groups: dict[str, dict[int, list[Any]]] = {}
        self._reserved = 0
        self._closed = False

    # --- the sandbox ----------------------------------------------------------------
    @property
    def pool(self) -> SandboxPool:
        """The sandbox pool (made on first use, with the server's call deadline)."""
        if self._pool is None:
            from spade_sandbox.limits import SandboxLimits
            from spade_sandbox.pool import SandboxPool

            self._pool = SandboxPool(
                SandboxLimits(call_timeout_s=self.settings.call_timeout_s, max_idle_workers=self.settings.max_idle_workers)
            )
        return self._pool

    def _sandboxed(self, env: ServedEnv) -> bool:
        return not (env.kind == "seed" and self.settings.seeds_in_process)

    def _open_instance(self, env: ServedEnv, group: int | None) -> TextEnv:
        meta = env.metadata
        if group is None:  # a trusted seed, in this process
            cls = load_trusted_class(env.source, meta.class_name, source_name=meta.id)
            return ReferenceEnvAdapter(lambda: instantiate(cls), max_turns=meta.max_turns, reward_range=meta.reward_range)
        from spade_sandbox.env import SandboxedEnv

        return SandboxedEnv(
            _group_source(env.source, group),
            pool=self.pool,
            max_turns=meta.max_turns,
            allowed_modules=env.allowed_modules,
            reward_range=meta.reward_range,
            class_name=meta.class_name,
        )

    def _take_group(self, env_id: str, client: str) -> int:
        """A group of ``client``'s with room, else the lowest free group number."""
        groups = self._groups.setdefault(env_id, {})
        for k, held in groups.items():
            if held[0] == client and held[1] < self.settings.sessions_per_worker:
                held[1] += 1
                return k
        k = 0
        while k in groups:
            k += 1
        groups[k] = [client, 1]
        return k

    def _give_group(self, env_id: str, group: int | None) -> None:
        if group is None:
            return
        groups = self._groups.get(env_id, {})
        held = groups.get(group)
        if held is None:
            return
        held[1] -= 1
        if held[1] <= 0:
            del groups[group]

    # --- lifecycle ------------------------------------------------------------------
    async def open(self, env_id: str, client: str, transport: str) -> Session:
        """A new session on ``env_id`` for ``client``: :class:`CapacityReached` past the
        total or per-client limit, :class:`UnknownEnv`, :class:`ServerBusy`, or
        :class:`EnvFailed` when the instance cannot be built."""
        if self._closed:
            raise ServerBusy("the server is shutting down")
        s = self.settings
        open_now = len(self.sessions) + self._reserved
        if open_now >= s.max_sessions:
            raise CapacityReached(
                f"the server has {open_now} sessions open, its limit (max_sessions = {s.max_sessions})",
                active_sessions=open_now,
                max_sessions=s.max_sessions,
            )
        mine = self._per_client.get(client, 0)
        if mine >= s.max_sessions_per_client:
            raise CapacityReached(
                f"this client has {mine} sessions open, its limit (max_sessions_per_client = "
                f"{s.max_sessions_per_client}); close one first",
                active_sessions=mine,
                max_sessions=s.max_sessions_per_client,
            )
        env = await self.gate.run(self.catalog.get, env_id)
        group = self._take_group(env.id, client) if self._sandboxed(env) else None
        self._reserved += 1
        self._per_client[client] = mine + 1
        try:
            instance = await self._start_instance(env, group)
        except BaseException as exc:
            self._give_group(env.id, group)
            self._release_client(client)
            if isinstance(exc, Exception) and not isinstance(exc, ServeError):
                raise _env_failed(exc, f"cannot start {env.id}", session_closed=True) from None
            raise
        finally:
            self._reserved -= 1
        now = time.monotonic()
        session = Session(uuid.uuid4().hex, env, client, transport, instance, group, now, now)
        self.sessions[session.id] = session
        if self._closed:  # shutdown began while the worker started
            await self.close(session)
            raise ServerBusy("the server is shutting down")
        return session

    async def _start_instance(self, env: ServedEnv, group: int | None) -> TextEnv:
        # Started on a call thread; if the request is cancelled meanwhile (the client
        # went away), the instance still arrives and is closed then instead of leaking.
        if self.gate.pending >= self.gate.capacity:
            raise ServerBusy(f"the server is at capacity ({self.gate.pending} environment calls running or queued)")
        self.gate.pending += 1
        future = asyncio.get_running_loop().run_in_executor(self.gate.executor, self._open_instance, env, group)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            future.add_done_callback(_close_when_started)
            raise
        finally:
            self.gate.pending -= 1

    def _release_client(self, client: str) -> None:
        left = self._per_client.get(client, 0) - 1
        if left > 0:
            self._per_client[client] = left
        else:
            self._per_client.pop(client, None)

    def get(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise SessionNotFound(
                f"no open session {session_id!r} (closed, expired after "
                f"{self.settings.idle_timeout_s:g} s idle, or never opened): reset without a session id to open one",
                session_id=session_id,
            )
        return session

    async def close(self, session: Session, reason: str | None = None) -> None:
        """Close the session and free its instance. Idempotent. ``reason`` (idle,
        shutdown) is passed to the transport's close callback."""
        if session.closed:
            return
        session.closed = True
        try:
            await asyncio.get_running_loop().run_in_executor(None, _close_quietly, session.instance)
        finally:
            # Counted until its instance is freed, so that an empty session table means
            # every worker is free again (and the limits count what is really held).
            self.sessions.pop(session.id, None)
            self._release_client(session.client)
            self._give_group(session.env.id, session.group)
            if reason is not None and session.on_server_close is not None:
                await session.on_server_close(reason)

    async def close_idle(self) -> int:
        """Close every session idle for longer than ``idle_timeout_s``; how many."""
        limit = time.monotonic() - self.settings.idle_timeout_s
        idle = [s for s in self.sessions.values() if s.last_active < limit and not s.lock.locked()]
        for session in idle:
            await self.close(session, "idle")
        return len(idle)

    async def shutdown(self) -> None:
        """Close every session, then the call threads and the pool (every worker and the
        zygote). Idempotent."""
        if self._closed:
            return
        self._closed = True
        for session in list(self.sessions.values()):
            await self.close(session, "shutdown")
        self.gate.shutdown()
        if self._own_pool and self._pool is not None:
            self._pool.close()

    # --- episode calls ----------------------------------------------------------------
    async def reset(self, session: Session, seed: int | None = None, episode_id: str | None = None) -> SpadeObservation:
        async with session.lock:
            self._check_open(session)
            session.last_active = time.monotonic()
            try:
                obs, info, tools = await self.gate.run(self._reset_call, session, seed)
            except ServerBusy:
                raise
            except Exception as exc:
                raise await self._failed(session, exc, "reset") from None
            session.seed = getattr(session.instance, "last_seed", seed)
            session.episode_id = episode_id or uuid.uuid4().hex
            session.step_count, session.total_reward = 0, 0.0
            session.started, session.terminated, session.truncated = True, False, False
            session.last_active = time.monotonic()
            return SpadeObservation(text=obs, info=info, tools=tools, done=False, reward=None, metadata=self._meta(session))

    def _reset_call(self, session: Session, seed: int | None) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
        obs, info = session.instance.reset(seed=seed)
        tools: list[dict[str, Any]] = []
        if session.env.uses_tools and not session.started:
            tools = list(getattr(session.instance, "tools", []) or [])
        return obs, info, tools

    async def step(self, session: Session, action: str) -> SpadeObservation:
        async with session.lock:
            self._check_open(session)
            if not session.started:
                raise EpisodeStateError("step before reset: reset the session first", session_id=session.id)
            if session.terminated or session.truncated:
                raise EpisodeStateError("the episode is over: reset to play again", session_id=session.id)
            session.last_active = time.monotonic()
            try:
                obs, raw_reward, terminated, truncated, info = await self.gate.run(session.instance.step, action)
            except ServerBusy:
                raise
            except Exception as exc:
                raise await self._failed(session, exc, "step") from None
            reward = float(raw_reward)  # checked finite and in range by the adapter
            session.step_count += 1
            session.total_reward += reward
            session.terminated, session.truncated = bool(terminated), bool(truncated)
            session.last_active = time.monotonic()
            return SpadeObservation(
                text=obs,
                info=info,
                terminated=session.terminated,
                truncated=session.truncated,
                done=session.terminated or session.truncated,
                reward=reward,
                metadata=self._meta(session),
            )

    def _check_open(self, session: Session) -> None:
        if session.closed:
            raise SessionNotFound(f"session {session.id!r} is closed", session_id=session.id)

    @staticmethod
    def _meta(session: Session) -> dict[str, Any]:
        return {
            "env_id": session.env.id,
            "session_id": session.id,
            "episode_id": session.episode_id,
            "seed": session.seed,
            "step_count": session.step_count,
            "terminated": session.terminated,
            "truncated": session.truncated,
        }

    async def _failed(self, session: Session, exc: BaseException, method: str) -> ServeError:
        kind = getattr(exc, "kind", None) or ("contract" if isinstance(exc, SpadeError) else "env_code")
        if kind == "request":  # the client's action was refused (too long...), not the env's fault
            return InvalidRequest(f"{method}: {getattr(exc, 'message', None) or exc}", kind="request")
        fatal = kind in _FATAL_KINDS
        error = _env_failed(exc, f"{session.env.id} {method}() failed", session_closed=fatal)
        if fatal:
            await self.close(session)
        return error

    def stats(self) -> dict[str, Any]:
        workers = len(self._pool.workers()) if self._pool is not None and not self._pool.closed else 0
        return {
            "sessions": len(self.sessions),
            "max_sessions": self.settings.max_sessions,
            "pending_calls": self.gate.pending,
            "call_capacity": self.gate.capacity,
            "workers": workers,
        }


def _env_failed(exc: BaseException, what: str, *, session_closed: bool) -> EnvFailed:
    """An :class:`EnvFailed` saying what failed, without any traceback."""
    kind = getattr(exc, "kind", None) or ("contract" if isinstance(exc, SpadeError) else "env_code")
    message = getattr(exc, "message", None) if hasattr(exc, "env_traceback") else None
    if message is None:
        message = str(exc) if isinstance(exc, SpadeError) else f"{type(exc).__name__}: {exc}"
    return EnvFailed(f"{what}: {message}", kind=str(kind), session_closed=session_closed)


def _close_when_started(future: Any) -> None:
    if not future.cancelled() and future.exception() is None:
        _close_quietly(future.result())


def _close_quietly(instance: TextEnv) -> None:
    try:
        instance.close()
    except Exception:  # a lost worker's instance is gone already; closing is best effort
        pass


__all__ = ["CallGate", "Session", "SessionManager"]
