"""The driver side of the Ray executor: :class:`RayEnvPool`.

It offers the calls of :class:`spade_sandbox.SandboxPool` the rollout engine uses
(``spawn``, ``reset_many``, ``step_many``, ``call``, ``close_env``, ``close``), so it plugs
in wherever the local pool does. Policy and generation stay in the driver; only
environment stepping runs on the actors. A batch is split by actor, sent to every actor
at once, and reassembled in order; each actor steps its share through its own sandbox
pool (whose deadlines kill hung workers and answer ``SandboxTimeout`` for them).

An actor that does not answer within the sandbox deadline plus ``actor_grace_s``, or that
dies, is killed and replaced: its items fail with ``SandboxTimeout`` / ``SandboxCrash``,
later calls on its instances with ``SandboxCrash("instance lost ...")``, and every other
actor's items are unaffected.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from spade_core.metadata import code_hash
from spade_sandbox.errors import SandboxCrash, SandboxError, SandboxRequestError, SandboxTimeout
from spade_sandbox.limits import SandboxLimits
from spade_sandbox.pool import ResetResult, StepResult

from ..errors import TrainerError
from .settings import RaySettings
from .wire import OK, decode_call, decode_error, decode_reset, decode_step

RAY_INSTALL_HINT = "pip install 'spade-trainer[ray]'"


class RayUnavailable(TrainerError):
    """Ray is not installed, or the cluster cannot be reached or has no room for the actors."""


@dataclass(frozen=True)
class RayEnvHandle:
    """An environment instance on one sandbox actor. Meaningful only to its pool."""

    slot: int
    generation: int
    instance: int
    code_hash: str
    class_name: str | None

    def __repr__(self) -> str:
        return f"RayEnvHandle({self.class_name}@{self.code_hash[:8]}, actor={self.slot}.{self.generation}, instance={self.instance})"


@dataclass
class _Slot:
    """One actor position; a replaced actor gets the next generation (old handles are lost)."""

    index: int
    generation: int = 0
    actor: Any = None
    instances: set[int] = field(default_factory=set)
    known_codes: set[str] = field(default_factory=set)
    lost_reason: str | None = None


def import_ray() -> Any:
    """The ``ray`` module, or :class:`RayUnavailable` saying how to install it."""
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise RayUnavailable(f"rollout.executor = 'ray' needs Ray, which is not installed: {RAY_INSTALL_HINT}") from None


class RayEnvPool:
    """Sandbox pools on Ray actors behind the ``SandboxPool`` interface (see module docstring).

    Connects to Ray when built: joins the instance already initialised in this process,
    else ``ray.init(address=settings.address)`` (and then shuts Ray down on :meth:`close`).
    """

    def __init__(
        self,
        settings: RaySettings | None = None,
        *,
        limits: SandboxLimits | None = None,
        backend: str = "native",
        allow_insecure: bool = False,
    ) -> None:
        self.settings = settings or RaySettings()
        self.limits = limits or SandboxLimits()
        self._backend = backend
        self._allow_insecure = allow_insecure
        self._ray = import_ray()
        self._owns_ray = False
        if not self._ray.is_initialized():
            try:
                self._ray.init(
                    address=self.settings.address or None,
                    namespace=self.settings.namespace,
                    include_dashboard=False,
                    log_to_driver=False,
                )
            except Exception as exc:  # ray raises ConnectionError, RuntimeError, ValueError...
                where = self.settings.address or "a new local instance"
                raise RayUnavailable(f"could not start or join Ray at {where}: {exc}") from exc
            self._owns_ray = True
        from .actor import SandboxActor

        self._actor_class = self._ray.remote(num_cpus=self.settings.cpus_per_worker)(SandboxActor)
        count = self.settings.num_workers or max(1, int(self._ray.cluster_resources().get("CPU", 1) // self.settings.cpus_per_worker))
        self._slots = [_Slot(i) for i in range(count)]
        self._closed = False
        for slot in self._slots:
            self._start(slot)
        # Fail here, not in the first rollout, when the actors cannot start (sandbox
        # unavailable on a node, no room in the cluster).
        self._wait_ready()

    # --- lifecycle ----------------------------------------------------------------------
    def __enter__(self) -> RayEnvPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def num_workers(self) -> int:
        return len(self._slots)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Stop every actor (and their sandbox workers); handles become invalid. Idempotent."""
        if self._closed:
            return
        self._closed = True
        refs = [s.actor.shutdown.remote() for s in self._slots if s.actor is not None]
        if refs:
            self._ray.wait(refs, num_returns=len(refs), timeout=self.settings.actor_grace_s)
        for slot in self._slots:
            if slot.actor is not None:
                self._ray.kill(slot.actor)
                slot.actor = None
        if self._owns_ray:
            self._ray.shutdown()

    def actors(self) -> list[dict[str, Any]]:
        """Where each live actor runs (host, pid) and how many instances and workers it holds."""
        live = [s for s in self._slots if s.actor is not None]
        replies = self._gather([(s, s.actor.where.remote()) for s in live], self.settings.actor_grace_s)
        return [{"slot": s.index, "generation": s.generation, **r} for s, r in zip(live, replies, strict=True)
                if isinstance(r, dict)]

    # --- the SandboxPool interface ------------------------------------------------------
    def spawn(self, source: str, *, allowed_modules: Iterable[str] = (), class_name: str | None = None) -> RayEnvHandle:
        """Create an instance on the least loaded actor. Raises what the sandbox raises
        (``StaticCheckError``, ``EnvCodeError``, ...), rebuilt from the actor's reply."""
        self._check_open()
        if not isinstance(source, str):
            raise SandboxRequestError(f"environment source must be a str, got {type(source).__name__}")
        allowed = sorted(set(allowed_modules))
        digest = code_hash(source)
        slot = min(self._slots, key=lambda s: (len(s.instances), digest not in s.known_codes, s.index))
        if slot.actor is None:
            self._start(slot)
        reply = self._spawn_on(slot, digest, None if digest in slot.known_codes else source, allowed, class_name)
        if type(reply) is list and reply[:1] == ["unknown_code"]:  # the actor was replaced meanwhile
            reply = self._spawn_on(slot, digest, source, allowed, class_name)
        if type(reply) is list and len(reply) == 2 and reply[0] == OK and type(reply[1]) is int:
            slot.known_codes.add(digest)
            slot.instances.add(reply[1])
            return RayEnvHandle(slot.index, slot.generation, reply[1], digest, class_name)
        if isinstance(reply, SandboxError):
            raise reply
        raise decode_error(reply, "spawn")

    def reset_many(self, items: Sequence[tuple[RayEnvHandle, int | None]]) -> list[ResetResult | SandboxError]:
        """Reset many instances, all actors at once; per item ``(obs, info)`` or its error."""
        limit = self.limits.max_output_chars
        return self._batch("reset_many", items, lambda r: decode_reset(r, limit))

    def step_many(self, items: Sequence[tuple[RayEnvHandle, str]]) -> list[StepResult | SandboxError]:
        """Step many instances, all actors at once; per item the 5-tuple or its error."""
        limit = self.limits.max_output_chars
        return self._batch("step_many", items, lambda r: decode_step(r, limit))

    def reset(self, handle: RayEnvHandle, seed: int | None = None) -> ResetResult:
        return _raise_or_return(self.reset_many([(handle, seed)])[0])

    def step(self, handle: RayEnvHandle, action: str) -> StepResult:
        return _raise_or_return(self.step_many([(handle, action)])[0])

    def call(self, handle: RayEnvHandle, method: str) -> Any:
        """``solution`` / ``get_tool_schemas`` of the instance (checked as the local pool does)."""
        slot = self._live_slot(handle)
        reply = self._gather([(slot, slot.actor.call.remote(handle.instance, method))], self._deadline())[0]
        if isinstance(reply, SandboxError):
            raise reply
        return decode_call(reply, method, self.limits.max_output_chars)

    def close_env(self, handle: RayEnvHandle) -> None:
        """Close the instance. Queued on its actor, not awaited: calls from this driver to one
        actor run in order, so nothing sent later can see it open. Idempotent."""
        if self._closed or not isinstance(handle, RayEnvHandle) or not 0 <= handle.slot < len(self._slots):
            return
        slot = self._slots[handle.slot]
        if slot.actor is None or slot.generation != handle.generation or handle.instance not in slot.instances:
            return
        slot.instances.discard(handle.instance)
        slot.actor.close_env.remote(handle.instance)

    # --- internals ----------------------------------------------------------------------
    def _start(self, slot: _Slot) -> None:
        slot.generation += 1
        slot.instances.clear()
        slot.known_codes.clear()
        slot.lost_reason = None
        slot.actor = self._actor_class.options(scheduling_strategy="SPREAD").remote(
            self.limits.model_dump(), self._backend, self._allow_insecure
        )

    def _wait_ready(self) -> None:
        refs = [s.actor.where.remote() for s in self._slots]
        ready, _ = self._ray.wait(refs, num_returns=len(refs), timeout=self.limits.spawn_timeout_s + self.settings.actor_grace_s)
        for slot, ref in zip(self._slots, refs, strict=True):
            if ref not in ready:
                self.close()
                raise RayUnavailable(
                    f"Ray sandbox actor {slot.index} did not start within "
                    f"{self.limits.spawn_timeout_s + self.settings.actor_grace_s:.0f} s (no free CPU in the cluster?)"
                )
            try:
                self._ray.get(ref)
            except Exception as exc:
                self.close()
                raise RayUnavailable(f"Ray sandbox actor {slot.index} failed to start: {exc}") from exc

    def _deadline(self) -> float:
        # The actor's pool answers within its own deadlines (a call, or starting a worker);
        # the grace covers Ray's transport and scheduling.
        return self.limits.call_timeout_s + self.limits.spawn_timeout_s + self.settings.actor_grace_s

    def _spawn_on(self, slot: _Slot, digest: str, source: str | None, allowed: list[str], class_name: str | None) -> Any:
        ref = slot.actor.spawn.remote(digest, source, allowed, class_name)
        return self._gather([(slot, ref)], self._deadline())[0]

    def _batch(self, op: str, items: Sequence[tuple[RayEnvHandle, Any]], decode: Callable[[Any], Any]) -> list[Any]:
        self._check_open()
        results: list[Any] = [None] * len(items)
        groups: dict[int, list[int]] = {}
        for i, (handle, _) in enumerate(items):
            try:
                self._live_slot(handle)
            except SandboxError as exc:
                results[i] = exc
                continue
            groups.setdefault(handle.slot, []).append(i)
        calls = []
        for index, idx in groups.items():
            slot = self._slots[index]
            payload = [(items[i][0].instance, items[i][1]) for i in idx]
            calls.append((slot, getattr(slot.actor, op).remote(payload)))
        replies = self._gather(calls, self._deadline())
        for (index, idx), reply in zip(groups.items(), replies, strict=True):
            if isinstance(reply, SandboxError):
                for i in idx:
                    results[i] = reply
            elif type(reply) is not list or len(reply) != len(idx):
                err = SandboxCrash(f"Ray sandbox actor {index} answered {op} with a malformed reply")
                for i in idx:
                    results[i] = err
            else:
                for i, r in zip(idx, reply, strict=True):
                    results[i] = decode(r)
        return results

    def _gather(self, calls: list[tuple[_Slot, Any]], timeout: float) -> list[Any]:
        """Each call's value, or the ``SandboxError`` of an actor that hung or died (it is replaced)."""
        if not calls:
            return []
        refs = [ref for _, ref in calls]
        ready, _ = self._ray.wait(refs, num_returns=len(refs), timeout=timeout)
        ready_set = set(ready)
        out: list[Any] = []
        for slot, ref in calls:
            if ref not in ready_set:
                out.append(SandboxTimeout(f"Ray sandbox actor {slot.index} did not answer within {timeout:.0f} s; it was killed"))
                self._lose(slot, "did not answer and was killed")
                continue
            try:
                out.append(self._ray.get(ref))
            except Exception as exc:  # RayActorError, ActorDiedError, RayTaskError...
                out.append(SandboxCrash(f"Ray sandbox actor {slot.index} failed: {type(exc).__name__}: {exc}"))
                self._lose(slot, f"died ({type(exc).__name__})")
        return out

    def _lose(self, slot: _Slot, reason: str) -> None:
        if slot.actor is not None:
            try:
                self._ray.kill(slot.actor)
            except Exception:
                pass
        slot.actor = None
        slot.lost_reason = reason
        slot.instances.clear()
        slot.known_codes.clear()

    def _live_slot(self, handle: Any) -> _Slot:
        if not isinstance(handle, RayEnvHandle) or not 0 <= handle.slot < len(self._slots):
            raise SandboxRequestError(f"{handle!r} is not a handle of this Ray pool")
        slot = self._slots[handle.slot]
        if slot.generation != handle.generation or slot.actor is None:
            why = slot.lost_reason or "was replaced"
            raise SandboxCrash(f"instance lost because Ray sandbox actor {handle.slot} {why}")
        if handle.instance not in slot.instances:
            raise SandboxRequestError(f"{handle!r} is closed")
        return slot

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxRequestError("this Ray sandbox pool is closed")


def _raise_or_return(result: Any) -> Any:
    if isinstance(result, BaseException):
        raise result
    return result


__all__ = ["RAY_INSTALL_HINT", "RayEnvHandle", "RayEnvPool", "RayUnavailable", "import_ray"]
