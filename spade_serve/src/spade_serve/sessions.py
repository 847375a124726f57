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
``sessions_per_worker`` is. Each group has its own isolation key in the pool (whose
workers are keyed by code version and that key), so two groups never share a worker while
every group runs the code exactly as stored. A worker killed for a hang, a crash or its memory
limit therefore touches the sessions of its group only.

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
import hashlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from spade_core.env import ReferenceEnvAdapter, TextEnv
from spade_core.errors import SpadeError
from spade_core.returns import episode_return
from spade_core.source import instantiate, load_trusted_class
from spade_sandbox.errors import InstanceLost, SandboxError, WorkerKilled

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
    from spade_sandbox.launcher import SandboxLauncher
    from spade_sandbox.pool import SandboxPool

T = TypeVar("T")

#: The largest seed a reset takes (the sandbox's protocol carries seeds as 64-bit integers).
MAX_SEED = 2**64 - 1


def check_seed(seed: int | None) -> None:
    """:class:`InvalidRequest` naming ``seed`` unless it is ``None`` or 0 to :data:`MAX_SEED`
    (checked before a session is opened for it, and by every reset)."""
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise InvalidRequest(f"seed must be from 0 to {MAX_SEED}, got {str(seed)[:40]}", param="seed")


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


@dataclass(eq=False, slots=True)
class WorkerGroup:
    """Sessions of one environment and one client that share one sandbox worker."""

    client: str
    sessions: int = 0
    #: One environment call at a time goes to the worker (the pool would serialise them
    #: anyway); a session waiting for it longer than ``move_after_s`` moves instead.
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: Bumped when a session's call killed the worker: sessions of an older generation
    #: are restored on a fresh worker before their next call.
    generation: int = 0


@dataclass(eq=False, slots=True)
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
    last_reward: float | None = None
    closed: bool = False
    #: In a shared worker group: the group generation the instance belongs to, and the
    #: episode as played (the reset's digest, then each action with its result's digest),
    #: from which the session is restored when another session's call kills the worker.
    generation: int = 0
    replay: list[tuple[bytes | None, bytes]] | None = None
    #: Bytes of actions (UTF-8) in ``replay``; why the episode's log was dropped (it
    #: passed ``max_replay_steps`` or ``max_replay_bytes``: the session is then ended,
    #: not replayed, should it need restoring); restores and moves this episode.
    replay_bytes: int = 0
    replay_dropped: str | None = None
    restores: int = 0
    #: Steps of this episode on which the environment raised (no turn of its own; at
    #: ``max_turns`` of them the episode ends truncated).
    raised: int = 0
    #: Called when the server ends the session on its own (idle, shutdown): closes the
    #: WebSocket of a WebSocket session.
    on_server_close: Callable[[str], Awaitable[None]] | None = None
    #: The OpenAI-format tool schemas the instance reported at its first reset (tool-use
    #: environments): what the session's MCP ``tools/list`` shows.
    tools: list[dict[str, Any]] | None = None

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
            last_reward=self.last_reward,
            episode_return=episode_return(self.last_reward, self.terminated),
        )


def _group_key(env_id: str, group: int) -> str:
    """The pool's isolation key of a worker group of ``env_id``."""
    return f"spade-serve/{env_id}/group-{group}"


def _digest(*parts: Any) -> bytes:
    """A 16-byte digest of a call's result (its ``repr``), to check a replay against."""
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(repr(part).encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.digest()


class ReplayDiverged(Exception):
    """A restored instance did not replay the episode as the client saw it."""


class ReplayRefused(Exception):
    """The session's episode is not replayed: its log passed the server's bounds, or it was
    restored ``max_restores`` times already this episode."""


class SessionManager:
    """Every open session of one server; see the module docstring."""

    def __init__(
        self,
        catalog: EnvCatalog,
        settings: ServeSettings,
        *,
        pool: SandboxPool | None = None,
        launcher: SandboxLauncher | None = None,
    ) -> None:
        """``launcher`` makes the sandbox pool (default: ``[spade.sandbox]``'s defaults);
        ``pool``, a pool the caller owns, is used instead."""
        self.catalog = catalog
        self.settings = settings
        self._pool = pool
        self._launcher = launcher
        self._own_pool = pool is None
        self.gate = CallGate(settings.max_concurrent_calls, settings.max_queued_calls)
        #: Closes the instances sessions left behind when restored or moved: one thread, so
        #: instances on a worker busy with a hung call wait there, not on the shared threads.
        self._closer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spade-serve-close")
        self.sessions: dict[str, Session] = {}
        self._per_client: dict[str, int] = {}
        #: env id -> group number -> the group (the client whose sessions it holds...)
        self._groups: dict[str, dict[int, WorkerGroup]] = {}
        self._reserved = 0
        self._closed = False

    # --- the sandbox ----------------------------------------------------------------
    @property
    def pool(self) -> SandboxPool:
        """The sandbox pool, made on first use by the launcher (the configured backend and
        limits), with the server's call deadline and idle workers."""
        if self._pool is None:
            from spade_sandbox.launcher import SandboxLauncher

            launcher = self._launcher or SandboxLauncher()
            # With shared workers a new one is needed once per group, so the zygote's spare
            # (a whole worker forked ahead to make the next spawn quicker) is not kept.
            shared = self.settings.sessions_per_worker > 1
            self._pool = launcher.pool(
                keep_spare=not shared,
                call_timeout_s=self.settings.call_timeout_s,
                max_idle_workers=self.settings.max_idle_workers,
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
            env.source,
            pool=self.pool,
            isolation=_group_key(env.group_id, group),
            max_turns=meta.max_turns,
            allowed_modules=env.allowed_modules,
            reward_range=meta.reward_range,
            class_name=meta.class_name,
        )

    def _take_group(self, env_id: str, client: str, *, fresh: bool = False) -> int:
        """A group of ``client``'s with room (unless ``fresh``), else the lowest free
        group number."""
        groups = self._groups.setdefault(env_id, {})
        if not fresh:
            for k, held in groups.items():
                if held.client == client and held.sessions < self.settings.sessions_per_worker:
                    held.sessions += 1
                    return k
        k = 0
        while k in groups:
            k += 1
        groups[k] = WorkerGroup(client, 1)
        return k

    def _give_group(self, env_id: str, group: int | None) -> None:
        if group is None:
            return
        groups = self._groups.get(env_id, {})
        held = groups.get(group)
        if held is None:
            return
        held.sessions -= 1
        if held.sessions <= 0:
            del groups[group]
            if not groups:  # one per environment and knob setting ever played: not kept empty
                del self._groups[env_id]

    def _shared_group(self, session: Session) -> WorkerGroup | None:
        """The session's group when it may hold other sessions (``sessions_per_worker >
        1``); ``None`` for a worker of its own or an in-process seed."""
        if session.group is None or self.settings.sessions_per_worker == 1:
            return None
        return self._groups.get(session.env.group_id, {}).get(session.group)

    # --- shared workers: one call at a time, restoring, moving --------------------------
    @asynccontextmanager
    async def _worker_turn(self, session: Session, *, replay: bool) -> AsyncIterator[None]:
        """Hold the session's group for one call: wait for the group's worker (moving to a
        fresh worker after ``move_after_s``), and restore the session first if another
        session's call killed its worker. ``replay``: whether the episode so far must be
        replayed (not before a reset, which starts a new one)."""
        group = self._shared_group(session)
        if group is None:
            yield
            return
        if not await _acquire_within(group.lock, self.settings.move_after_s):
            if self._replay_refusal(session, replay=replay) is None:
                await self._move(session, replay=replay)
                group = self._shared_group(session)
                assert group is not None
            # else: a session that would not be replayed waits for its worker instead
            await group.lock.acquire()
        try:
            if session.generation != group.generation:
                await self._restore(session, replay=replay)
            yield
        finally:
            group.lock.release()

    async def _move(self, session: Session, *, replay: bool) -> None:
        """Move the session to a worker of its own (a fresh group) by restoring it there."""
        new = self._take_group(session.env.group_id, session.client, fresh=True)
        try:
            await self._restore(session, replay=replay, group=new)
        except BaseException:
            if session.group != new:  # it never got there
                self._give_group(session.env.group_id, new)
            raise

    async def _restore(self, session: Session, *, replay: bool, group: int | None = None) -> None:
        """A fresh instance for the session (in ``group``, else its own), with the episode
        replayed onto it when ``replay``; the old instance is closed on the closing thread
        (its worker may be dead, or busy with a hung call). An instance that cannot be
        started, or a replay that fails or diverges, ends the session with kind ``crash``
        (:class:`ServerBusy` leaves it to be restored at its next call)."""
        target = session.group if group is None else group
        assert target is not None
        refusal = self._replay_refusal(session, replay=replay)
        if refusal is not None:
            raise await self._not_restored(session, ReplayRefused(refusal))
        try:
            instance = await self._start_instance(session.env, target)
        except ServerBusy:
            raise
        except Exception as exc:
            raise await self._not_restored(session, exc) from None
        old, session.instance = session.instance, instance
        if target != session.group:
            self._give_group(session.env.group_id, session.group)
            session.group = target
        session.generation = -1  # restored only once the replay below has gone through
        self._closer.submit(_close_quietly, old)
        if replay and session.started and session.replay is not None:
            session.restores += 1
            try:
                await self.gate.run(self._replay, session)
            except ServerBusy:
                raise
            except Exception as exc:
                raise await self._not_restored(session, exc) from None
        held = self._groups.get(session.env.group_id, {}).get(target)
        session.generation = held.generation if held is not None else 0

    def _replay_refusal(self, session: Session, *, replay: bool) -> str | None:
        """Why the session's episode may not be replayed onto a fresh worker (its log was
        dropped, or it was restored ``max_restores`` times this episode); ``None`` when it
        may (or nothing is to be replayed)."""
        if not replay or not session.started:
            return None
        if session.replay_dropped is not None:
            return session.replay_dropped
        if session.replay is None:
            return "its episode was not kept for replaying"
        if session.restores >= self.settings.max_restores:
            return (
                f"it was restored {session.restores} times this episode already, this server's limit "
                f"(max_restores = {self.settings.max_restores}): reset to start a new episode"
            )
        return None

    def _record(self, session: Session, action: str, digest: bytes) -> None:
        """Keep one step in the session's replay log, or drop the log (and keep no more of
        the episode) once it would pass ``max_replay_steps`` or ``max_replay_bytes``."""
        played = session.replay
        if played is None:
            return
        data = action.encode("utf-8", "surrogatepass")
        s = self.settings
        if len(played) - 1 >= s.max_replay_steps or session.replay_bytes + len(data) > s.max_replay_bytes:
            session.replay = None
            session.replay_bytes = 0
            session.replay_dropped = (
                f"its episode passed this server's replay bound ({s.max_replay_steps} actions or "
                f"{s.max_replay_bytes} bytes of actions: max_replay_steps / max_replay_bytes), so it is not "
                "replayed: reset to start a new episode"
            )
            return
        played.append((data, digest))
        session.replay_bytes += len(data)

    async def _not_restored(self, session: Session, exc: Exception) -> EnvFailed:
        why = str(exc) if isinstance(exc, (ReplayDiverged, ReplayRefused)) else f"{type(exc).__name__}: {getattr(exc, 'message', exc)}"
        await self.close(session)
        return EnvFailed(
            f"{session.env.id}: another session's call killed or held this session's worker, and the session could "
            f"not be restored on a fresh worker: {why}",
            kind="crash",
            session_closed=True,
        )

    @staticmethod
    def _replay(session: Session) -> None:
        """On a call thread: reset with the episode's seed and replay its actions onto the
        session's new instance, checking every result against its digest."""
        played = session.replay
        assert played is not None
        obs, info = session.instance.reset(seed=session.seed)
        if _digest(obs, info) != played[0][1]:
            raise ReplayDiverged("replaying it gave a different first observation (the environment is not deterministic)")
        for turn, (action, expected) in enumerate(played[1:], 1):
            assert action is not None
            try:
                got = _digest(*session.instance.step(action.decode("utf-8", "surrogatepass")))
            except Exception as exc:
                got = _digest("error", getattr(exc, "kind", None) or type(exc).__name__)
            if got != expected:
                raise ReplayDiverged(
                    f"replaying its {len(played) - 1} actions gave a different result at step {turn} "
                    "(the environment is not deterministic)"
                )

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
        group = self._take_group(env.group_id, client) if self._sandboxed(env) else None
        self._reserved += 1
        self._per_client[client] = mine + 1
        try:
            instance = await self._start_instance(env, group)
        except BaseException as exc:
            self._give_group(env.group_id, group)
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
            self._give_group(session.env.group_id, session.group)
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
        self._closer.shutdown(wait=False, cancel_futures=True)
        if self._own_pool and self._pool is not None:
            self._pool.close()

    async def _switch(self, session: Session, env: ServedEnv) -> None:
        """Give the session an instance of ``env``, another knob setting of its environment
        (a task's variant, :mod:`spade_serve.tasks`): other code, so a fresh instance in a
        worker group of that setting's; the old instance is closed on the closing thread and
        its group given back. The session keeps its id, so whoever holds it (an MCP client, a
        WebSocket attached to it) plays on. When the new instance cannot be started, the
        session is left as it was (:class:`ServerBusy`, or :class:`EnvFailed` that does not
        close it)."""
        if env.id != session.env.id:
            raise InvalidRequest(f"session {session.id} is a session of {session.env.id}, not of {env.id}")
        group = self._take_group(env.group_id, session.client) if self._sandboxed(env) else None
        try:
            instance = await self._start_instance(env, group)
        except BaseException as exc:
            self._give_group(env.group_id, group)
            if isinstance(exc, Exception) and not isinstance(exc, ServeError):
                raise _env_failed(exc, f"cannot start {env.id} at {dict(env.knobs)}", session_closed=False) from None
            raise
        if session.closed:  # closed while the instance started (shutdown): nothing to switch
            self._give_group(env.group_id, group)
            self._closer.submit(_close_quietly, instance)
            self._check_open(session)
        old, old_env, old_group = session.instance, session.env, session.group
        session.instance, session.env, session.group = instance, env, group
        self._give_group(old_env.group_id, old_group)
        held = self._groups.get(env.group_id, {}).get(group) if group is not None else None
        session.generation = held.generation if held is not None else 0
        # a new instance: its first reset reports its tools again, and nothing is replayed
        session.started, session.tools, session.replay = False, None, None
        self._closer.submit(_close_quietly, old)

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
            async with self._worker_turn(session, replay=False):
                try:
                    obs, info, tools = await self.gate.run(self._reset_call, session, seed)
                except ServerBusy:
                    raise
                except Exception as exc:
                    raise await self._failed(session, exc, "reset") from None
            session.replay = [(None, _digest(obs, info))] if self._shared_group(session) is not None else None
            if tools:
                session.tools = tools
            session.replay_bytes, session.replay_dropped, session.restores, session.raised = 0, None, 0, 0
            session.seed = getattr(session.instance, "last_seed", seed)
            session.episode_id = episode_id or uuid.uuid4().hex
            session.step_count, session.total_reward, session.last_reward = 0, 0.0, None
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
            async with self._worker_turn(session, replay=True):
                try:
                    obs, raw_reward, terminated, truncated, info = await self.gate.run(session.instance.step, action)
                except ServerBusy:
                    raise
                except Exception as exc:
                    error = await self._failed(session, exc, "step")
                    if not session.closed and getattr(exc, "kind", None) != "request":
                        # The environment raised: its state may have moved, so the
                        # replay repeats the action and expects the same kind of error.
                        self._record(session, action, _digest("error", getattr(exc, "kind", None) or type(exc).__name__))
                        error = self._count_raised(session, error)
                    raise error from None
            self._record(session, action, _digest(obs, raw_reward, terminated, truncated, info))
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
                metadata=self._meta(session),
            )

    @staticmethod
    def _count_raised(session: Session, error: ServeError) -> ServeError:
        """Count a step the environment raised on: such a step is no turn, but an episode
        ends (truncated) once ``max_turns`` of its steps raised, so that a client cannot
        step it without end."""
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

    def _check_open(self, session: Session) -> None:
        if session.closed:
            raise SessionNotFound(f"session {session.id!r} is closed", session_id=session.id)

    @staticmethod
    def _meta(session: Session) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "env_id": session.env.id,
            "session_id": session.id,
            "episode_id": session.episode_id,
            "seed": session.seed,
            "step_count": session.step_count,
            "terminated": session.terminated,
            "truncated": session.truncated,
        }
        if session.env.knobs:  # a task's knob setting (spade_serve.tasks)
            meta["knobs"] = dict(session.env.knobs)
        return meta

    async def _failed(self, session: Session, exc: BaseException, method: str) -> ServeError:
        kind = getattr(exc, "kind", None) or ("contract" if isinstance(exc, SpadeError) else "env_code")
        if kind == "request":  # the client's action was refused (too long...), not the env's fault
            return InvalidRequest(f"{method}: {getattr(exc, 'message', None) or exc}", kind="request")
        # the worker is gone (SandboxError.worker_fatal): the session cannot go on, so it is
        # closed and the client told ``session_closed``
        fatal = isinstance(exc, SandboxError) and exc.worker_fatal
        error = _env_failed(exc, f"{session.env.id} {method}() failed", session_closed=fatal)
        if fatal:
            group = self._shared_group(session)
            if group is not None and not isinstance(exc, (InstanceLost, WorkerKilled)):
                group.generation += 1  # this call killed the worker: the others are restored
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


async def _acquire_within(lock: asyncio.Lock, timeout: float) -> bool:
    """Acquire ``lock`` within ``timeout`` seconds; whether it was acquired (a lock
    acquired just as the wait timed out is kept, never leaked)."""
    if not lock.locked():
        await lock.acquire()
        return True
    task = asyncio.ensure_future(lock.acquire())
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if done:
        return task.result()
    task.cancel()
    try:
        return await task
    except asyncio.CancelledError:
        return False


def _close_when_started(future: Any) -> None:
    if not future.cancelled() and future.exception() is None:
        _close_quietly(future.result())


def _close_quietly(instance: TextEnv) -> None:
    try:
        instance.close()
    except Exception:  # a lost worker's instance is gone already; closing is best effort
        pass


__all__ = ["MAX_SEED", "CallGate", "check_seed", "Session", "SessionManager", "WorkerGroup"]
