"""Sessions: one environment instance per client episode stream, and the limits around them.

A :class:`SessionManager` owns every open session of a server and the bounded thread pool
environment calls run on; it is handed the way instances are opened
(:class:`~spade_serve.env_factory.SandboxEnvFactory`: every instance in a sandbox worker,
seeds in a trusted worker when the server trusts them), as OpenEnv's server is handed its
environment factory. It is used from one asyncio event loop (the web app's); blocking work
(spawning a worker, a sandboxed ``step``) runs on the call threads, admitted by a
:class:`~spade_serve.calls.CallGate` that answers :class:`~spade_serve.errors.ServerBusy` at
once when every thread and queue place is taken.

Which worker a session's instance lives in (:mod:`spade_serve.worker_groups`): sessions of
one environment *and one client* are grouped ``sessions_per_worker`` to a worker; sessions
of different clients never share a worker process (nor the environment's module and class
state), whatever ``sessions_per_worker`` is. Each group has its own isolation key in the
pool (whose workers are keyed by code version and that key), so two groups never share a
worker while every group runs the code exactly as stored. A worker killed for a hang, a
crash or its memory limit therefore touches the sessions of its group only.

Within a shared group (``sessions_per_worker > 1``) one call at a time goes to the
worker, and each session keeps its episode's seed and actions with a digest of every
result. The session whose call killed the worker is closed with that error; every other
session of the group is *restored* before its next call: a fresh instance on a fresh
worker, reset with the episode's seed and stepped through its actions, each result checked
against the digest of what the client was sent (an environment that does not replay alike
ends that session with kind ``crash``). A session kept waiting more than ``move_after_s``
by another session's call (a hung environment) moves to a worker of its own the same way.
A worker that dies with no call of a session running (killed from outside, by an operator
or the kernel's OOM killer) ends every session it held.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Any

from spade_core.env import TextEnv
from spade_sandbox.errors import InstanceLost, SandboxError, WorkerKilled

from .calls import CallGate
from .catalog import EnvCatalog, ServedEnv
from .env_factory import SandboxEnvFactory
from .errors import (
    CapacityReached,
    EnvFailed,
    EpisodeStateError,
    InvalidRequest,
    ServeError,
    ServerBusy,
    SessionNotFound,
)
from .models import SpadeObservation
from .session import Session, check_seed, close_quietly, env_failed, failure_kind
from .settings import ServeSettings
from .worker_groups import WorkerGroups, digest, group_key

if TYPE_CHECKING:
    from spade_sandbox.pool import SandboxPool


class SessionManager:
    """Every open session of one server; see the module docstring. ``factory`` opens the
    sessions' instances (default: :meth:`SandboxEnvFactory.for_server
    <spade_serve.env_factory.SandboxEnvFactory.for_server>` of ``settings`` under
    ``[spade.sandbox]``'s defaults); :meth:`shutdown` closes it."""

    def __init__(self, catalog: EnvCatalog, settings: ServeSettings, *, factory: SandboxEnvFactory | None = None) -> None:
        self.catalog = catalog
        self.settings = settings
        self.factory = factory if factory is not None else SandboxEnvFactory.for_server(settings)
        self.gate = CallGate(settings.max_concurrent_calls, settings.max_queued_calls)
        #: Closes the instances sessions left behind when restored, moved or switched: one
        #: thread, so instances on a worker busy with a hung call wait there, not on the
        #: shared threads.
        self._closer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spade-serve-close")
        self._groups = WorkerGroups(settings, self.gate, start=self._start_instance, end=self.close, discard=self._discard)
        self.sessions: dict[str, Session] = {}
        self._per_client: dict[str, int] = {}
        self._reserved = 0
        self._closed = False

    @property
    def pool(self) -> SandboxPool:
        """The sandbox pool of the sessions' untrusted code (the factory's)."""
        return self.factory.pool

    async def _start_instance(self, env: ServedEnv, group: int) -> TextEnv:
        """An instance of ``env`` in ``group``'s worker, started on a call thread (closed
        when it arrives after its request was cancelled)."""
        opening = partial(self.factory.open, env, isolation=group_key(env.group_id, group))
        return await self.gate.start(opening, orphaned=close_quietly)

    def _discard(self, instance: TextEnv) -> None:
        self._closer.submit(close_quietly, instance)

    # --- lifecycle ------------------------------------------------------------------
    def check_room(self, client: str) -> int:
        """Whether ``client`` may open a session now: :class:`CapacityReached` past the total
        or per-client limit (:class:`ServerBusy` while shutting down); the sessions the client
        holds. The routes ask before they name an environment or a task, so that a refused
        request makes nothing the server would keep (:mod:`spade_serve.kept`)."""
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
        return mine

    async def open(self, env_id: str | ServedEnv, client: str, transport: str) -> Session:
        """A new session on ``env_id`` (an id of the catalog, or a served environment such as
        a task's knob variant) for ``client``: :class:`CapacityReached` past the
        total or per-client limit, :class:`UnknownEnv`, :class:`ServerBusy`, or
        :class:`EnvFailed` when the instance cannot be built."""
        mine = self.check_room(client)
        env = env_id if isinstance(env_id, ServedEnv) else await self.gate.run(self.catalog.get, env_id)
        group = self._groups.take(env.group_id, client)
        self._reserved += 1
        self._per_client[client] = mine + 1
        try:
            instance = await self._start_instance(env, group)
        except BaseException as exc:
            self._groups.give(env.group_id, group)
            self._release_client(client)
            if isinstance(exc, Exception) and not isinstance(exc, ServeError):
                raise env_failed(exc, f"cannot start {env.id}", session_closed=True) from None
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
            await asyncio.get_running_loop().run_in_executor(None, close_quietly, session.instance)
        finally:
            # Counted until its instance is freed, so that an empty session table means
            # every worker is free again (and the limits count what is really held).
            self.sessions.pop(session.id, None)
            self._release_client(session.client)
            self._groups.give(session.env.group_id, session.group)
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
        """Close every session, then the call threads and the factory (every worker and
        the zygotes of the pools it made). Idempotent."""
        if self._closed:
            return
        self._closed = True
        for session in list(self.sessions.values()):
            await self.close(session, "shutdown")
        self.gate.shutdown()
        self._closer.shutdown(wait=False, cancel_futures=True)
        self.factory.close()

    async def _switch(self, session: Session, env: ServedEnv) -> None:
        """Give the session an instance of ``env``, another knob setting of its environment
        (a task's variant, :mod:`spade_serve.tasks`): other code, so a fresh instance in a
        worker group of that setting's; the old instance is discarded and its group given
        back. The session keeps its id, so whoever holds it (an MCP client, a WebSocket
        attached to it) plays on. When the new instance cannot be started, the session is
        left as it was (:class:`ServerBusy`, or :class:`EnvFailed` that does not close it)."""
        if env.id != session.env.id:
            raise InvalidRequest(f"session {session.id} is a session of {session.env.id}, not of {env.id}")
        group = self._groups.take(env.group_id, session.client)
        try:
            instance = await self._start_instance(env, group)
        except BaseException as exc:
            self._groups.give(env.group_id, group)
            if isinstance(exc, Exception) and not isinstance(exc, ServeError):
                raise env_failed(exc, f"cannot start {env.id} at {dict(env.knobs)}", session_closed=False) from None
            raise
        if session.closed:  # closed while the instance started (shutdown): nothing to switch
            self._groups.give(env.group_id, group)
            self._discard(instance)
            self._check_open(session)
        old, old_env, old_group = session.instance, session.env, session.group
        session.instance, session.env, session.group = instance, env, group
        self._groups.give(old_env.group_id, old_group)
        session.generation = self._groups.generation(env.group_id, group)
        # a new instance: its first reset reports its tools again, and nothing is replayed
        session.started, session.tools, session.replay = False, None, None
        self._discard(old)

    # --- episode calls ----------------------------------------------------------------
    async def reset(
        self, session: Session, seed: int | None = None, episode_id: str | None = None, *, env: ServedEnv | None = None
    ) -> SpadeObservation:
        """A new episode of the session. ``env``: the environment to play it on, another knob
        setting of the session's (a task's variant); the session switches to an instance of
        it first when its setting is not the session's."""
        check_seed(seed)
        async with session.lock:
            self._check_open(session)
            session.last_active = time.monotonic()
            if env is not None and env.group_id != session.env.group_id:
                await self._switch(session, env)
            async with self._groups.turn(session, replay=False):
                try:
                    obs, info, tools = await self.gate.run(_reset_call, session, seed)
                except ServerBusy:
                    raise
                except Exception as exc:
                    raise await self._failed(session, exc, "reset") from None
            session.replay = [(None, digest(obs, info))] if self._groups.shared(session) is not None else None
            if tools:
                session.tools = tools
            session.replay_bytes, session.replay_dropped, session.restores, session.raised = 0, None, 0, 0
            session.seed = getattr(session.instance, "last_seed", seed)
            session.episode_id = episode_id or uuid.uuid4().hex
            session.step_count, session.total_reward, session.last_reward = 0, 0.0, None
            session.started, session.terminated, session.truncated = True, False, False
            session.last_active = time.monotonic()
            return SpadeObservation(text=obs, info=info, tools=tools, done=False, reward=None, metadata=session.meta())

    async def step(self, session: Session, action: str) -> SpadeObservation:
        async with session.lock:
            self._check_open(session)
            if not session.started:
                raise EpisodeStateError("step before reset: reset the session first", session_id=session.id)
            if session.terminated or session.truncated:
                raise EpisodeStateError("the episode is over: reset to play again", session_id=session.id)
            session.last_active = time.monotonic()
            async with self._groups.turn(session, replay=True):
                try:
                    obs, raw_reward, terminated, truncated, info = await self.gate.run(session.instance.step, action)
                except ServerBusy:
                    raise
                except Exception as exc:
                    error = await self._failed(session, exc, "step")
                    if not session.closed and getattr(exc, "kind", None) != "request":
                        # The environment raised: its state may have moved, so the
                        # replay repeats the action and expects the same kind of error.
                        self._groups.record(session, action, digest("error", getattr(exc, "kind", None) or type(exc).__name__))
                        error = _count_raised(session, error)
                    raise error from None
            self._groups.record(session, action, digest(obs, raw_reward, terminated, truncated, info))
            reward = float(raw_reward)  # checked finite and in range by the adapter
            session.step_count += 1
            session.total_reward += reward
            session.last_reward = reward
            session.terminated, session.truncated = bool(terminated), bool(truncated)
            session.last_active = time.monotonic()
            return SpadeObservation(
                text=obs,
                info=info,
                terminated=session.terminated,
                truncated=session.truncated,
                done=session.terminated or session.truncated,
                reward=reward,
                metadata=session.meta(),
            )

    def _check_open(self, session: Session) -> None:
        if session.closed:
            raise SessionNotFound(f"session {session.id!r} is closed", session_id=session.id)

    async def _failed(self, session: Session, exc: BaseException, method: str) -> ServeError:
        if failure_kind(exc) == "request":  # the client's action was refused (too long...), not the env's fault
            return InvalidRequest(f"{method}: {getattr(exc, 'message', None) or exc}", kind="request")
        # the worker is gone (SandboxError.worker_fatal): the session cannot go on, so it is
        # closed and the client told ``session_closed``
        fatal = isinstance(exc, SandboxError) and exc.worker_fatal
        error = env_failed(exc, f"{session.env.id} {method}() failed", session_closed=fatal)
        if fatal:
            if not isinstance(exc, (InstanceLost, WorkerKilled)):
                self._groups.killed_by(session)  # this call killed the worker: the others are restored
            await self.close(session)
        return error

    def stats(self) -> dict[str, Any]:
        return {
            "sessions": len(self.sessions),
            "max_sessions": self.settings.max_sessions,
            "pending_calls": self.gate.pending,
            "call_capacity": self.gate.capacity,
            "workers": self.factory.workers(),
        }


def _reset_call(session: Session, seed: int | None) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    obs, info = session.instance.reset(seed=seed)
    tools: list[dict[str, Any]] = []
    if session.env.uses_tools and not session.started:
        tools = list(getattr(session.instance, "tools", []) or [])
    return obs, info, tools


def _count_raised(session: Session, error: ServeError) -> ServeError:
    """Count a step the environment raised on: such a step is no turn, but an episode ends
    (truncated) once ``max_turns`` of its steps raised, so that a client cannot step it
    without end."""
    session.raised += 1
    limit = session.env.metadata.max_turns
    if session.raised < limit or not isinstance(error, EnvFailed):
        return error
    session.truncated = True
    return EnvFailed(
        f"{error.message}; the episode is over (truncated): {session.raised} of its steps raised, this "
        f"environment's max_turns ({limit}): reset to play again",
        kind=error.kind,
        session_closed=False,
    )


__all__ = ["CallGate", "SessionManager"]
