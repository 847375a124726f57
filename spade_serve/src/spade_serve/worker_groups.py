"""Which sandbox worker each session's instance lives in, and how a session whose shared
worker another session's call killed or held is restored on a fresh one by replaying its
episode (:class:`WorkerGroups`; the rules are :mod:`spade_serve.sessions`' docstring)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from spade_core.env import TextEnv

from .calls import CallGate
from .catalog import ServedEnv
from .errors import EnvFailed, ServerBusy
from .session import Session
from .settings import ServeSettings


def group_key(env_id: str, group: int) -> str:
    """The pool's isolation key of a worker group of ``env_id``."""
    return f"spade-serve/{env_id}/group-{group}"


def digest(*parts: Any) -> bytes:
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


class WorkerGroups(dict[str, dict[int, WorkerGroup]]):
    """The worker groups of one server, by environment (its ``group_id``: the id, and the
    knob setting of a variant), then by group number; an environment is in it while it has
    a group. ``start(env, group)`` starts an instance in a group's worker, ``end(session)``
    closes a session that cannot go on, ``discard(instance)`` frees an instance a session
    left behind (on a thread of its own: its worker may be dead, or busy with a hung call).
    Used from the server's event loop only."""

    def __init__(
        self,
        settings: ServeSettings,
        gate: CallGate,
        *,
        start: Callable[[ServedEnv, int], Awaitable[TextEnv]],
        end: Callable[[Session], Awaitable[None]],
        discard: Callable[[TextEnv], None],
    ) -> None:
        super().__init__()
        self.settings = settings
        self.gate = gate
        self._start = start
        self._end = end
        self._discard = discard

    # --- membership -------------------------------------------------------------------
    def take(self, env_id: str, client: str, *, fresh: bool = False) -> int:
        """A group of ``client``'s with room (unless ``fresh``), else the lowest free
        group number."""
        groups = self.setdefault(env_id, {})
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

    def give(self, env_id: str, group: int) -> None:
        groups = self.get(env_id, {})
        held = groups.get(group)
        if held is None:
            return
        held.sessions -= 1
        if held.sessions <= 0:
            del groups[group]
            if not groups:  # one per environment and knob setting ever played: not kept empty
                del self[env_id]

    def generation(self, env_id: str, group: int) -> int:
        """The group's generation now (0 for a group no longer held)."""
        held = self.get(env_id, {}).get(group)
        return held.generation if held is not None else 0

    def shared(self, session: Session) -> WorkerGroup | None:
        """The session's group when it may hold other sessions (``sessions_per_worker >
        1``); ``None`` for a worker of its own."""
        if self.settings.sessions_per_worker == 1:
            return None
        return self.get(session.env.group_id, {}).get(session.group)

    def killed_by(self, session: Session) -> None:
        """The session's call killed its worker: the other sessions of its group are
        restored before their next call."""
        group = self.shared(session)
        if group is not None:
            group.generation += 1

    # --- one call at a time, restoring, moving -------------------------------------------
    @asynccontextmanager
    async def turn(self, session: Session, *, replay: bool) -> AsyncIterator[None]:
        """Hold the session's group for one call: wait for the group's worker (moving to a
        fresh worker after ``move_after_s``), and restore the session first if another
        session's call killed its worker. ``replay``: whether the episode so far must be
        replayed (not before a reset, which starts a new one)."""
        group = self.shared(session)
        if group is None:
            yield
            return
        if not await _acquire_within(group.lock, self.settings.move_after_s):
            if self.refusal(session, replay=replay) is None:
                await self._move(session, replay=replay)
                group = self.shared(session)
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
        new = self.take(session.env.group_id, session.client, fresh=True)
        try:
            await self._restore(session, replay=replay, group=new)
        except BaseException:
            if session.group != new:  # it never got there
                self.give(session.env.group_id, new)
            raise

    async def _restore(self, session: Session, *, replay: bool, group: int | None = None) -> None:
        """A fresh instance for the session (in ``group``, else its own), with the episode
        replayed onto it when ``replay``; the old instance is discarded. An instance that
        cannot be started, or a replay that fails or diverges, ends the session with kind
        ``crash`` (:class:`ServerBusy` leaves it to be restored at its next call)."""
        target = session.group if group is None else group
        refusal = self.refusal(session, replay=replay)
        if refusal is not None:
            raise await self._not_restored(session, ReplayRefused(refusal))
        try:
            instance = await self._start(session.env, target)
        except ServerBusy:
            raise
        except Exception as exc:
            raise await self._not_restored(session, exc) from None
        old, session.instance = session.instance, instance
        if target != session.group:
            self.give(session.env.group_id, session.group)
            session.group = target
        session.generation = -1  # restored only once the replay below has gone through
        self._discard(old)
        if replay and session.started and session.replay is not None:
            session.restores += 1
            try:
                await self.gate.run(_replay, session)
            except ServerBusy:
                raise
            except Exception as exc:
                raise await self._not_restored(session, exc) from None
        session.generation = self.generation(session.env.group_id, target)

    def refusal(self, session: Session, *, replay: bool) -> str | None:
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

    def record(self, session: Session, action: str, result: bytes) -> None:
        """Keep one step (its action and its result's digest) in the session's replay log,
        or drop the log (and keep no more of the episode) once it would pass
        ``max_replay_steps`` or ``max_replay_bytes``."""
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
        played.append((data, result))
        session.replay_bytes += len(data)

    async def _not_restored(self, session: Session, exc: Exception) -> EnvFailed:
        why = str(exc) if isinstance(exc, (ReplayDiverged, ReplayRefused)) else f"{type(exc).__name__}: {getattr(exc, 'message', exc)}"
        await self._end(session)
        return EnvFailed(
            f"{session.env.id}: another session's call killed or held this session's worker, and the session could "
            f"not be restored on a fresh worker: {why}",
            kind="crash",
            session_closed=True,
        )


def _replay(session: Session) -> None:
    """On a call thread: reset with the episode's seed and replay its actions onto the
    session's new instance, checking every result against its digest."""
    played = session.replay
    assert played is not None
    obs, info = session.instance.reset(seed=session.seed)
    if digest(obs, info) != played[0][1]:
        raise ReplayDiverged("replaying it gave a different first observation (the environment is not deterministic)")
    for turn, (action, expected) in enumerate(played[1:], 1):
        assert action is not None
        try:
            got = digest(*session.instance.step(action.decode("utf-8", "surrogatepass")))
        except Exception as exc:
            got = digest("error", getattr(exc, "kind", None) or type(exc).__name__)
        if got != expected:
            raise ReplayDiverged(
                f"replaying its {len(played) - 1} actions gave a different result at step {turn} "
                "(the environment is not deterministic)"
            )


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


__all__ = ["ReplayDiverged", "ReplayRefused", "WorkerGroup", "WorkerGroups", "digest", "group_key"]
