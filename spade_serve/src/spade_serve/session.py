"""One session: a client's environment instance and its episode (:class:`Session`), the
record :class:`~spade_serve.sessions.SessionManager` keeps per session and its worker groups
(:mod:`spade_serve.worker_groups`) restore; and the failures an instance reports, as the
client reads them (:func:`env_failed`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from spade_core.env import TextEnv
from spade_core.errors import SpadeError
from spade_core.returns import episode_return

from .catalog import ServedEnv
from .errors import EnvFailed, InvalidRequest
from .models import SpadeState

#: The largest seed a reset takes (the sandbox's protocol carries seeds as 64-bit integers).
MAX_SEED = 2**64 - 1


def check_seed(seed: int | None) -> None:
    """:class:`InvalidRequest` naming ``seed`` unless it is ``None`` or 0 to :data:`MAX_SEED`
    (checked before a session is opened for it, and by every reset)."""
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise InvalidRequest(f"seed must be from 0 to {MAX_SEED}, got {str(seed)[:40]}", param="seed")


@dataclass(eq=False, slots=True)
class Session:
    """One client's environment instance and its episode."""

    id: str
    env: ServedEnv
    client: str
    transport: str
    instance: TextEnv
    #: The worker group its instance lives in (:mod:`spade_serve.worker_groups`).
    group: int
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

    def meta(self) -> dict[str, Any]:
        """What every observation of the session carries in its ``metadata``."""
        meta: dict[str, Any] = {
            "env_id": self.env.id,
            "session_id": self.id,
            "episode_id": self.episode_id,
            "seed": self.seed,
            "step_count": self.step_count,
            "terminated": self.terminated,
            "truncated": self.truncated,
        }
        if self.env.knobs:  # a task's knob setting (spade_serve.tasks)
            meta["knobs"] = dict(self.env.knobs)
        return meta


def failure_kind(exc: BaseException) -> str:
    """The ``kind`` a failure is reported with: the sandbox's own, else ``contract`` for
    the core's errors and ``env_code`` for anything the environment raised."""
    return getattr(exc, "kind", None) or ("contract" if isinstance(exc, SpadeError) else "env_code")


def env_failed(exc: BaseException, what: str, *, session_closed: bool) -> EnvFailed:
    """An :class:`EnvFailed` saying what failed, without any traceback."""
    message = getattr(exc, "message", None) if hasattr(exc, "env_traceback") else None
    if message is None:
        message = str(exc) if isinstance(exc, SpadeError) else f"{type(exc).__name__}: {exc}"
    return EnvFailed(f"{what}: {message}", kind=str(failure_kind(exc)), session_closed=session_closed)


def close_quietly(instance: TextEnv) -> None:
    """Close an instance, best effort: a lost worker's instance is gone already."""
    try:
        instance.close()
    except Exception:
        pass


__all__ = ["MAX_SEED", "Session", "check_seed", "close_quietly", "env_failed", "failure_kind"]
