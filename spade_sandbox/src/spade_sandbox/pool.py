"""The worker pool: the API the rest of SPADE uses to run untrusted environment code.

One worker process per environment code version (source hash + class + allowed modules),
each holding many instances. Requests to different workers can run concurrently from
different threads; requests to one worker are serialised.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from spade_core.metadata import code_hash

from .allowlist import MODULE_FACADES
from .backends import Backend, resolve_backend
from .batches import BatchCalls
from .channel import WorkerLink
from .errors import (
    SandboxCrash,
    SandboxError,
    SandboxRequestError,
    StaticCheckError,
    error_from_reply,
)
from .handles import EnvHandle, WorkerInfo, check_seed
from .limits import SandboxLimits
from .protocol import WorkerKey
from .replies import (  # noqa: F401 (ResetResult, StepResult, check_*_reply: imported from here by others)
    ResetResult,
    StepResult,
    check_call_reply,
    check_info_size,
    check_reset_reply,
    check_step_reply,
    what_came,
)
from .static import StaticFinding, check_source

#: Dead workers remembered so that their handles say "instance lost" (oldest forgotten first).
_MAX_DEAD_WORKERS = 4096



class SandboxPool(BatchCalls):
    """Runs untrusted environment code in hardened worker processes.

    ``backend`` names a sandbox backend registered through ``spade_register_sandbox_backends``
    (``"native"``, the default, or ``"restricted"``...). ``allow_insecure`` lets code run
    where neither seccomp nor Landlock+rlimits is active. ``unsafe_skip_static_check``
    exists for tests of the OS layers only: it disables the static check *and* the runtime
    guard, so the source runs with full builtins inside the worker. ``unsafe_runtime_guard``
    (tests of the guard alone) keeps the guard on with the static check off.

    A context manager; :meth:`close` kills every worker and the zygote.
    """

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        backend: str | Backend = "native",
        allow_insecure: bool = False,
        *,
        unsafe_skip_static_check: bool = False,
        unsafe_runtime_guard: bool | None = None,
    ) -> None:
        self.limits = limits or SandboxLimits()
        self.allow_insecure = allow_insecure
        self.skip_static = unsafe_skip_static_check
        self.runtime_guard = not unsafe_skip_static_check if unsafe_runtime_guard is None else unsafe_runtime_guard
        self.backend = resolve_backend(backend) if isinstance(backend, str) else backend
        self._lock = threading.RLock()
        self._current: dict[WorkerKey, WorkerLink] = {}
        self._links: dict[int, WorkerLink] = {}
        self._next_worker = 0
        self._closed = False
        self._pending_drops: list[EnvHandle] = []
        self._spawn_locks = [threading.Lock() for _ in range(32)]
        #: Live workers with no instance, oldest first (kept warm up to max_idle_workers).
        self._idle: OrderedDict[int, WorkerLink] = OrderedDict()
        # The limits are frozen: read once here instead of through the model on every call.
        self._max_action_chars = self.limits.max_action_chars
        self._max_output_chars = self.limits.max_output_chars
        #: The handles of the last step batch that took the fast path, with their grouping
        #: (rollouts step the same handles again and again: checking them once is enough).
        self._last_steps: tuple[list[EnvHandle], dict[int, list[int]], dict[int, WorkerLink], list[int] | None] | None = None

    # --- lifecycle ----------------------------------------------------------------------
    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, wait: bool = True) -> None:
        """Kill every worker and stop the zygote; handles become invalid. Idempotent.

        ``wait=False`` (what interpreter exit does for the default pool) sends the kills and
        the zygote's exit without waiting for any of them to be reaped: the zygote finishes
        its clean-up on its own.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            links = list(self._links.values())
            self._links.clear()
            self._current.clear()
        for link in links:
            with link.lock:
                link.shutdown(wait)
        self.backend.close(wait)

    def forget(self) -> None:
        """Close this process's descriptors of the workers and the zygote, telling them
        nothing: for a child made by ``os.fork``, where they belong to the parent."""
        self._closed = True
        for link in self._links.values():
            link.close_fds()
        self._links.clear()
        self._current.clear()
        self._idle.clear()
        forget = getattr(self.backend, "forget", None)
        if forget is not None:
            forget()

    @property
    def closed(self) -> bool:
        return self._closed

    # --- spawning -----------------------------------------------------------------------
    def spawn(
        self,
        source: str,
        *,
        allowed_modules: Iterable[str] = (),
        class_name: str | None = None,
        isolation: str = "",
    ) -> EnvHandle:
        """Create an instance of the environment defined by ``source``.

        Workers are keyed by code version (the source's hash, the class, the allowed
        modules) and ``isolation``: instances spawned with different ``isolation`` keys
        never share a worker process (nor the module's or the class's state), the same
        code or not. ``spade serve`` gives each client's group of sessions its own key.

        Runs the static check first (:class:`StaticCheckError` lists every finding), then
        constructs the class in the worker for this code version, starting that worker if
        needed. :class:`EnvCodeError` if the class body or constructor raises.
        """
        self._check_open()
        self._drain_pending()
        # A facade module (math_verify) is kept only for a source that names it: the zygote
        # imports what a spawn allows, and every worker forked after that carries it.
        allowed = tuple(sorted(m for m in set(allowed_modules) if m not in MODULE_FACADES or m in source))
        if not self.skip_static:
            report = check_source(source, allowed)
            if not report.ok:
                raise StaticCheckError(report.findings)
            class_name = class_name or report.class_name
        elif class_name is None:
            report = check_source(source, allowed)
            class_name = report.class_name
        if class_name is None:
            raise StaticCheckError([StaticFinding(1, 0, "env-class", "no top-level class whose name ends in 'Env'")])
        key = (code_hash(source), class_name, allowed, str(isolation))
        link = self._worker_for(key, source)
        with link.lock:
            alive = link.alive
        if not alive:  # died between lookup and use: the next lookup starts a fresh one
            link = self._worker_for(key, source)
        with link.lock:
            first = getattr(link, "first_reply", None)
            if first is not None:  # a new worker built instance 0 while loading
                link.first_reply = None
                iid = 0
                if type(first) is not list or len(first) != 2 or first[0] != "ok":
                    raise self._bad_reply(link, first, f"{class_name}()")
            else:
                iid = link.next_instance
                link.next_instance += 1
                reply = self._request(link, ["new", iid], f"{class_name}()")
                if reply[0] != "ok":
                    raise self._reply_error(link, reply, f"{class_name}()")
            link.instances.add(iid)
        return EnvHandle(link.id, iid, key[0], class_name)

    def _worker_for(self, key: WorkerKey, source: str) -> WorkerLink:
        # Striped per-code-version lock: two threads spawning the same new code share
        # one worker instead of racing to start two.
        with self._spawn_locks[hash(key) % len(self._spawn_locks)]:
            with self._lock:
                link = self._current.get(key)
                if link is not None and link.alive:
                    self._idle.pop(link.id, None)
                    return link
                self._next_worker += 1
                worker_id = self._next_worker
            return self._start_worker(key, source, worker_id)

    def _start_worker(self, key: WorkerKey, source: str, worker_id: int) -> WorkerLink:
        spec = {
            "source": source,
            "class_name": key[1],
            "allowed_modules": list(key[2]),
            "layers": self.limits.layer_options(),
            "require_secure": not self.allow_insecure,
            "guarded": self.runtime_guard,
            "max_output_chars": self.limits.max_output_chars,
            "first_instance": 0,
        }
        link = self.backend.start_worker(worker_id, key, spec, self.limits)
        with self._lock:
            self._check_open(link)
            self._current[key] = link
            self._links[worker_id] = link
            self._forget_dead_links()
        return link

    def _forget_dead_links(self) -> None:
        """Dead workers stay known (so their handles report "instance lost") up to a bound,
        keeping only their error's message: the traceback it got when raised holds the
        frames of the call that found the worker dead, and with them the worker's last
        reply (forgotten here, so a hostile worker's reply is not kept for the pool's life)."""
        dead = [wid for wid, link in self._links.items() if not link.alive]
        for wid in dead[: max(0, len(dead) - _MAX_DEAD_WORKERS)]:
            del self._links[wid]
        for wid in dead[-_MAX_DEAD_WORKERS:]:
            death = self._links[wid].death
            if death is not None:
                death.__traceback__ = None
                death.__context__ = death.__cause__ = None

    # --- single calls -------------------------------------------------------------------
    def reset(self, handle: EnvHandle, seed: int | None = None) -> ResetResult:
        """``reset(seed)`` of the instance; returns ``(observation, info)``."""
        if seed is not None:
            check_seed(seed)
        link = self._live_link(handle)
        with link.lock:
            if link.death is not None or handle.instance_id not in link.instances:
                raise self._lost(link, handle)
            reply = link.call(["reset", handle.instance_id, seed], "reset()")
            if type(reply) is not list or len(reply) != 2 or reply[0] != "ok":
                raise self._bad_reply(link, reply, "reset()")
        return check_reset_reply(reply[1], self._max_output_chars)

    def step(self, handle: EnvHandle, action: str) -> StepResult:
        """``step(action)`` of the instance; returns the validated 5-tuple.

        The hot path of single steps, written out in one frame: the checks of
        :meth:`_live_link` and :func:`check_step_reply` are repeated inline (a round trip
        runs right after a context switch, with cold caches, where every extra Python
        frame costs a few hundred nanoseconds; see docs/sandbox-security.md). Anything
        unusual goes to the same functions as before, which raise the specific error."""
        if type(action) is not str or len(action) > self._max_action_chars:
            self._check_action(action)
        link = self._links.get(handle.worker_id) if type(handle) is EnvHandle and not self._closed else None
        if link is None or link.key[0] != handle.code_hash:
            link = self._link(handle)
        with link.lock:
            if link.death is not None or handle.instance_id not in link.instances:
                raise self._lost(link, handle)
            reply = link.step(handle.instance_id, action)
            if type(reply) is tuple:
                # A binary reply: str, float, bool, bool and a new dict by construction.
                if reply[1] - reply[1] == 0.0 and len(reply[0]) <= self._max_output_chars:
                    return reply
                value: Any = list(reply)
            elif type(reply) is not list or len(reply) != 2 or reply[0] != "ok":
                raise self._bad_reply(link, reply, "step()")
            else:
                value = reply[1]
        return check_step_reply(value, self._max_output_chars)

    def call(self, handle: EnvHandle, method: str) -> Any:
        """Call an allow-listed method without arguments: ``"solution"`` or ``"get_tool_schemas"``."""
        if method not in ("solution", "get_tool_schemas", "close"):
            raise SandboxRequestError(f"method {method!r} may not be called (allowed: solution, get_tool_schemas)")
        link = self._live_link(handle)
        with link.lock:
            self._check_instance(link, handle)
            reply = link.call(["call", handle.instance_id, method], f"{method}()")
            if type(reply) is not list or len(reply) != 2 or reply[0] != "ok":
                raise self._bad_reply(link, reply, f"{method}()")
        return check_call_reply(method, reply[1], self._max_output_chars)

    def close_env(self, handle: EnvHandle) -> None:
        """Close the instance (calls its ``close()``) and forget it. Idempotent; a lost
        instance closes silently."""
        with self._lock:
            link = self._links.get(handle.worker_id)
        if link is None or self._closed:
            return
        with link.lock:
            if not link.alive or handle.instance_id not in link.instances:
                return
            link.instances.discard(handle.instance_id)
            reply = self._request(link, ["drop", handle.instance_id], "close()")
            if reply[0] != "ok":
                raise self._reply_error(link, reply, "close()")
        self._retire_if_idle(link)

    def close_env_later(self, handle: EnvHandle) -> None:
        """Queue ``close_env`` for the next spawn (safe from finalizers and other threads)."""
        self._pending_drops.append(handle)

    # --- introspection --------------------------------------------------------------------
    def workers(self) -> list[WorkerInfo]:
        with self._lock:
            links = [link for link in self._links.values() if link.alive]
        return [
            WorkerInfo(link.id, link.pid, link.key[1], link.key[0], len(link.instances), tuple(link.layers))
            for link in links
        ]

    def worker_of(self, handle: EnvHandle) -> WorkerInfo:
        link = self._link(handle)
        return WorkerInfo(link.id, link.pid, link.key[1], link.key[0], len(link.instances), tuple(link.layers))

    # --- internals ------------------------------------------------------------------------
    def _check_open(self, new_link: WorkerLink | None = None) -> None:
        if self._closed:
            if new_link is not None:
                new_link.shutdown()
            raise SandboxRequestError("the sandbox pool is closed")

    def _check_action(self, action: Any) -> None:
        if not isinstance(action, str):
            raise SandboxRequestError(f"action must be str, got {type(action).__name__}")
        if len(action) > self.limits.max_action_chars:
            raise SandboxRequestError(
                f"action of {len(action)} characters exceeds the limit of {self.limits.max_action_chars}"
            )

    def _live_link(self, handle: EnvHandle) -> WorkerLink:
        """The link of ``handle`` (the per-call path): one dict lookup, no pool lock (a
        single ``dict.get`` is atomic); anything unusual takes :meth:`_link`, which raises
        the specific error."""
        link = self._links.get(handle.worker_id) if type(handle) is EnvHandle and not self._closed else None
        if link is None or link.key[0] != handle.code_hash:
            return self._link(handle)
        return link

    def _link(self, handle: EnvHandle) -> WorkerLink:
        if not isinstance(handle, EnvHandle):
            raise SandboxRequestError(f"expected an EnvHandle, got {type(handle).__name__}")
        self._check_open()
        with self._lock:
            link = self._links.get(handle.worker_id)
        if link is None or link.key[0] != handle.code_hash:
            raise SandboxRequestError(f"{handle!r} does not belong to this pool or was closed")
        return link

    def _lost(self, link: WorkerLink, handle: EnvHandle) -> SandboxError:
        if not link.alive:
            return link.lost_error()
        return SandboxRequestError(f"{handle!r} was closed")

    def _check_instance(self, link: WorkerLink, handle: EnvHandle) -> None:
        if not link.alive or handle.instance_id not in link.instances:
            raise self._lost(link, handle)

    def _request(self, link: WorkerLink, message: list[Any], what: str) -> Any:
        reply = link.request(message, what, self.limits.call_timeout_s)
        if not isinstance(reply, list) or not reply or not isinstance(reply[0], str):
            raise self._protocol_error(link, what, reply)
        return reply

    def _bad_reply(self, link: WorkerLink, reply: Any, what: str) -> SandboxError:
        """The error for a reply that is not ``["ok", value]``: the worker's own error
        reply, or a protocol violation (the worker is killed)."""
        if type(reply) is not list or not reply or type(reply[0]) is not str or reply[0] == "ok":
            return self._protocol_error(link, what, reply)
        return self._reply_error(link, reply, what)

    def _protocol_error(self, link: WorkerLink, what: str, reply: Any = None) -> SandboxError:
        link.shutdown()
        err = SandboxCrash(
            f"worker {link.pid} broke the protocol during {what}: {what_came(reply)}; it was killed"
        )
        link.death = err
        return err

    def _reply_error(self, link: WorkerLink, reply: Any, what: str) -> SandboxError:
        err = error_from_reply(reply, what)
        if err.worker_fatal:
            lost = len(link.instances)
            link.shutdown()
            err.message += f" (worker {link.pid} was killed; its {lost} instance(s) are lost)"
            link.death = err
        return err

    def _retire_if_idle(self, link: WorkerLink) -> None:
        """A worker whose last instance closed stays warm while it is the current worker
        for its code version, among the ``max_idle_workers`` most recently idle; older idle
        workers and orphaned (replaced) ones are shut down."""
        victims = []
        with self._lock:
            if link.instances or not link.alive:
                return
            if self._current.get(link.key) is link:
                self._idle[link.id] = link
                self._idle.move_to_end(link.id)
            else:
                self._links.pop(link.id, None)
                victims.append(link)
            while len(self._idle) > self.limits.max_idle_workers:
                _, old = self._idle.popitem(last=False)
                if self._current.get(old.key) is old:
                    del self._current[old.key]
                self._links.pop(old.id, None)
                victims.append(old)
        for victim in victims:
            with victim.lock:
                if not victim.instances:
                    victim.shutdown()

    def _drain_pending(self) -> None:
        while self._pending_drops:
            handle = self._pending_drops.pop()
            try:
                self.close_env(handle)
            except SandboxError:
                pass
