"""The worker pool: the API the rest of SPADE uses to run untrusted environment code.

One worker process per environment code version (source hash + class + allowed modules),
each holding many instances. Requests to different workers can run concurrently from
different threads; requests to one worker are serialised.
"""

from __future__ import annotations

import atexit
import math
import operator
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from spade_core.metadata import code_hash

from . import native, protocol
from .backends import Backend, resolve_backend
from .channel import WorkerLink
from .errors import (
    EnvContractViolation,
    SandboxCrash,
    SandboxError,
    SandboxRequestError,
    StaticCheckError,
    error_from_reply,
)
from .limits import SandboxLimits
from .prestart import configures_default_sandbox, watch_default_pool
from .static import StaticFinding, check_source

ResetResult = tuple[str, dict[str, Any]]
StepResult = tuple[str, float, bool, bool, dict[str, Any]]

_SEED_RANGE = (-(2**63), 2**64 - 1)
_WORKER_ID = operator.attrgetter("worker_id")
_INSTANCE_ID = operator.attrgetter("instance_id")
_CODE_HASH = operator.attrgetter("code_hash")
_FIRST = operator.itemgetter(0)
_SECOND = operator.itemgetter(1)
#: The C decoder of columnar step replies (None: the pure-Python path).
_decode_columns = native.fast.decode_step_columns if native.fast is not None else None
#: The C split of a step batch into checked columns (None: the pure-Python path).
_split_steps = native.fast.split_steps if native.fast is not None else None


@dataclass(frozen=True)
class EnvHandle:
    """An environment instance living in a worker. Cheap to copy; meaningful only to the
    pool that returned it."""

    worker_id: int
    instance_id: int
    code_hash: str
    class_name: str

    def __repr__(self) -> str:
        return f"EnvHandle({self.class_name}@{self.code_hash[:8]}, worker={self.worker_id}, instance={self.instance_id})"


@dataclass(frozen=True)
class WorkerInfo:
    """What the pool knows about one live worker (for status, tests and benchmarks)."""

    worker_id: int
    pid: int
    class_name: str
    code_hash: str
    instances: int
    layers: tuple[str, ...]


# --- checks on values coming back from a worker ------------------------------------------


def _check_info(value: Any, method: str, limit: int = 65_536) -> dict[str, Any]:
    """The worker checked the info when it converted it; this checks it again as decoded
    (a worker is untrusted): a dict, at most :data:`protocol.MAX_INFO_DEPTH` deep, at most
    :data:`protocol.MAX_INFO_ITEMS` values and ``limit`` characters of text. The decoder
    admits only msgpack's plain types (no extension types) and str keys."""
    if type(value) is not dict:
        raise EnvContractViolation(f"{method}() returned info of type {type(value).__name__}, expected dict", method=method)
    if value:
        _check_info_size(value, method, limit)
    return value


def _check_info_size(info: Any, method: str, limit: int) -> None:
    """The worker's budget (``worker.wire_value``) applied again to the decoded value:
    at most :data:`protocol.MAX_INFO_ITEMS` values (containers included, keys not), no
    deeper than :data:`protocol.MAX_INFO_DEPTH` below ``info``, at most ``limit``
    characters of str/bytes values. Iterative: the value came from an untrusted worker."""
    items = 0
    text = 0
    stack: list[tuple[Any, int]] = [(info, 0)]
    while stack:
        value, depth = stack.pop()
        items += 1
        if items > protocol.MAX_INFO_ITEMS or depth > protocol.MAX_INFO_DEPTH:
            raise EnvContractViolation(f"{method}() returned info that is too large or too deeply nested", method=method)
        kind = type(value)
        if kind is str or kind is bytes:
            text += len(value)
            if text > limit:
                raise EnvContractViolation(f"{method}() returned info holding more than {limit} characters of text", method=method)
        elif kind is dict:
            stack.extend((member, depth + 1) for member in value.values())
        elif kind is list:
            stack.extend((member, depth + 1) for member in value)


def _check_obs(value: Any, method: str, limit: int) -> str:
    if not isinstance(value, str):
        raise EnvContractViolation(f"{method}() returned a non-str observation", method=method)
    if len(value) > limit:
        raise EnvContractViolation(
            f"{method}() returned an observation of {len(value)} characters (limit {limit})", method=method
        )
    return value


def check_reset_reply(value: Any, limit: int) -> ResetResult:
    if not isinstance(value, list) or len(value) != 2 or not isinstance(value[1], dict):
        raise EnvContractViolation("reset() reply is malformed", method="reset")
    return _check_obs(value[0], "reset", limit), _check_info(value[1], "reset", limit)


def check_step_reply(value: Any, limit: int) -> StepResult:
    if type(value) is not list or len(value) != 5:
        raise EnvContractViolation("step() reply is malformed", method="step")
    obs, reward, terminated, truncated, info = value
    if type(reward) is not float or not math.isfinite(reward):
        raise EnvContractViolation(f"step() returned an invalid reward {reward!r}", method="step")
    if type(terminated) is not bool or type(truncated) is not bool or type(info) is not dict:
        raise EnvContractViolation("step() reply has non-bool flags or non-dict info", method="step")
    if type(obs) is not str or len(obs) > limit:
        _check_obs(obs, "step", limit)
    if info:
        _check_info_size(info, "step", limit)
    return obs, reward, terminated, truncated, info


def check_call_reply(method: str, value: Any, limit: int) -> Any:
    if method == "solution":
        if isinstance(value, str):
            return _check_obs(value, "solution", limit)
        if isinstance(value, list) and all(isinstance(a, str) for a in value):
            if len(value) > limit or sum(map(len, value)) > limit:
                raise EnvContractViolation(
                    f"solution() returned {len(value)} actions of {sum(map(len, value))} characters in all "
                    f"(limit {limit} of each)", method="solution",
                )
            return value
        raise EnvContractViolation("solution() reply is malformed", method="solution")
    if method == "get_tool_schemas":
        if not isinstance(value, list) or not all(isinstance(s, dict) for s in value):
            raise EnvContractViolation("get_tool_schemas() must return a list of dicts", method=method)
        _check_info_size(value, method, limit)
        return value
    return None


#: Dead workers remembered so that their handles say "instance lost" (oldest forgotten first).
_MAX_DEAD_WORKERS = 4096

#: Error kinds after which the worker has exited by itself.
_FATAL_KINDS = frozenset({"memory", "timeout", "policy", "unavailable", "crash"})


class SandboxPool:
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
        self._current: dict[tuple[str, str, tuple[str, ...]], WorkerLink] = {}
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
    ) -> EnvHandle:
        """Create an instance of the environment defined by ``source``.

        Runs the static check first (:class:`StaticCheckError` lists every finding), then
        constructs the class in the worker for this code version, starting that worker if
        needed. :class:`EnvCodeError` if the class body or constructor raises.
        """
        self._check_open()
        self._drain_pending()
        allowed = tuple(sorted(set(allowed_modules)))
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
        key = (code_hash(source), class_name, allowed)
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

    def _worker_for(self, key: tuple[str, str, tuple[str, ...]], source: str) -> WorkerLink:
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

    def _start_worker(self, key: tuple[str, str, tuple[str, ...]], source: str, worker_id: int) -> WorkerLink:
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
            _check_seed(seed)
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

    # --- batches ------------------------------------------------------------------------
    def reset_many(self, items: Sequence[tuple[EnvHandle, int | None]]) -> list[ResetResult | SandboxError]:
        """Reset many instances: one message per worker, workers run in parallel. Each
        result is ``(obs, info)`` or the :class:`SandboxError` of that instance."""
        return self._batch("reset_many", items, "reset()")

    def step_many(self, items: Sequence[tuple[EnvHandle, str]]) -> list[StepResult | SandboxError]:
        """Step many instances: one message per worker, workers run in parallel. Each
        result is the 5-tuple or the :class:`SandboxError` of that instance."""
        return self._batch("step_many", items, "step()")

    def _batch(self, op: str, items: Sequence[tuple[EnvHandle, Any]], what: str) -> list[Any]:
        if op == "step_many":
            fast = self._group_steps(items)
            if fast is not None:
                by_worker, worker_links, actions, iids = fast
                return self._exchange(op, items, what, [None] * len(items), by_worker, worker_links, actions, iids)
        results: list[Any] = [None] * len(items)
        groups: dict[int, list[int]] = {}
        links: dict[int, WorkerLink] = {}
        for i, (handle, arg) in enumerate(items):
            try:
                if op == "step_many":
                    self._check_action(arg)
                else:
                    _check_seed(arg)
                link = self._link(handle)
            except SandboxError as exc:
                results[i] = exc
                continue
            groups.setdefault(link.id, []).append(i)
            links[link.id] = link
        return self._exchange(op, items, what, results, groups, links)

    def _group_steps(
        self, items: Sequence[tuple[EnvHandle, Any]]
    ) -> tuple[dict[int, list[int]], dict[int, WorkerLink], list[str], list[int] | None] | None:
        """Validate a step batch with whole-column operations and group it by worker
        (``groups``, ``links``, the actions, and the instance ids when one worker holds
        the whole batch).

        ``None`` when anything is unusual (a malformed item, a non-str or too long action,
        a foreign handle, a closed pool): the caller then checks item by item, which gives
        each bad item its specific error. The same handles as the previous fast batch
        (the usual rollout) reuse its grouping after one list comparison, as long as
        their workers are still this pool's."""
        if self._closed or not items:
            return None
        if _split_steps is not None and type(items) in (list, tuple):
            # The checks below in one C pass (the same rules).
            split = _split_steps(items, self._max_action_chars)
            if split is None:
                return None
            handles, actions = split
        else:
            try:
                if not set(map(type, items)) <= {tuple, list} or set(map(len, items)) != {2}:
                    return None
                handles = list(map(_FIRST, items))
                actions = list(map(_SECOND, items))
            except (TypeError, KeyError, IndexError):
                return None
            if set(map(type, actions)) != {str} or max(map(len, actions)) > self._max_action_chars:
                return None
        last = self._last_steps
        # List equality compares identical elements by identity: one C pass for the usual
        # batch of the same handle objects.
        if last is not None and _same_handles(handles, last[0]):
            links_get = self._links.get
            if all(links_get(wid) is link for wid, link in last[2].items()):
                return last[1], last[2], actions, last[3]
        if set(map(type, handles)) != {EnvHandle}:
            return None
        wids = list(map(_WORKER_ID, handles))
        groups: dict[int, list[int]]
        if wids.count(wids[0]) == len(wids):  # the usual case: one worker
            link = self._links.get(wids[0])
            if link is None or set(map(_CODE_HASH, handles)) != {link.key[0]}:
                return None
            found = ({wids[0]: list(range(len(wids)))}, {wids[0]: link}, actions, list(map(_INSTANCE_ID, handles)))
            self._last_steps = (handles, found[0], found[1], found[3])
            return found
        else:
            groups = {}
            for i, wid in enumerate(wids):
                groups.setdefault(wid, []).append(i)
        links: dict[int, WorkerLink] = {}
        for wid, idx in groups.items():
            link = self._links.get(wid)
            if link is None or {handles[i].code_hash for i in idx} != {link.key[0]}:
                return None
            links[wid] = link
        self._last_steps = (handles, groups, links, None)
        return groups, links, actions, None

    def _exchange(
        self,
        op: str,
        items: Sequence[tuple[EnvHandle, Any]],
        what: str,
        results: list[Any],
        groups: dict[int, list[int]],
        links: dict[int, WorkerLink],
        columns: list[Any] | None = None,
        instance_ids: list[int] | None = None,
    ) -> list[Any]:
        """Send one message per worker (``groups``: worker id -> item indexes), then read
        every reply and fill ``results`` in item order. ``columns``: the actions, and
        ``instance_ids``: the instance ids, of a batch that one worker holds whole."""
        order = sorted(links)
        for wid in order:
            links[wid].lock.acquire()
        try:
            sent: list[int] = []
            for wid in order:
                link = links[wid]
                if op == "step_many" and link.alive:
                    group = groups[wid]
                    if len(group) == len(items):  # one worker: the columns as they came
                        iids = list(map(_INSTANCE_ID, map(_FIRST, items))) if instance_ids is None else instance_ids
                        actions = [item[1] for item in items] if columns is None else columns
                    else:
                        iids = [items[i][0].instance_id for i in group]
                        actions = [items[i][1] for i in group]
                    if link.instances.issuperset(iids):
                        try:
                            link.send(["step_cols", iids, actions], what, self.limits.call_timeout_s)
                            sent.append(wid)
                        except SandboxError as exc:
                            self._fill(results, group, exc)
                        continue
                payload = []
                for i in groups[wid]:
                    handle = items[i][0]
                    if not link.alive or handle.instance_id not in link.instances:
                        results[i] = self._lost(link, handle)
                    else:
                        payload.append([handle.instance_id, items[i][1]])
                if not payload:
                    continue
                if op == "step_many":
                    message = ["step_cols", [p[0] for p in payload], [p[1] for p in payload]]
                else:
                    message = [op, payload]
                try:
                    link.send(message, what, self.limits.call_timeout_s)
                    sent.append(wid)
                except SandboxError as exc:
                    self._fill(results, groups[wid], exc)
            start = time.monotonic()
            for wid in sent:
                link = links[wid]
                idx = groups[wid]
                if len(idx) != len(results) or results.count(None) != len(results):
                    idx = [i for i in idx if results[i] is None]
                # What a valid reply for this many results can be (the frame cap for one).
                max_bytes = protocol.reply_bytes_limit(self._max_output_chars, len(idx), self.limits.max_frame_bytes)
                max_values = protocol.reply_values_limit(self._max_output_chars, len(idx))
                try:
                    if op == "step_many" and _decode_columns is not None and type(link) is WorkerLink:
                        # The C decoder takes a reply of plain results straight to the
                        # 5-tuples, with _unpack_columns' checks; anything else (None)
                        # goes through msgpack and those checks as before.
                        raw = link.receive_payload(what, start + self.limits.call_timeout_s,
                                                   self.limits.call_timeout_s, max_bytes)
                        rows = _decode_columns(raw, len(idx), self._max_output_chars)
                        if rows is not None:
                            if len(idx) == len(results):  # the whole batch, in order
                                results[:] = rows
                            else:
                                for i, row in zip(idx, rows, strict=True):
                                    results[i] = row
                            continue
                        reply = link.decode_payload(raw, what, max_values)
                    elif type(link) is WorkerLink:
                        reply = link.receive(what, start + self.limits.call_timeout_s, self.limits.call_timeout_s,
                                             max_bytes, max_values)
                    else:  # a link of another backend (no wire: nothing to bound)
                        reply = link.receive(what, start + self.limits.call_timeout_s, self.limits.call_timeout_s)
                except SandboxError as exc:
                    # The error is handed back in the results: its traceback would keep
                    # this frame, and the worker's raw reply in it, alive as long as they.
                    exc.__traceback__ = exc.__context__ = None
                    raw = None
                    self._fill(results, idx, exc)
                    continue
                self._unpack_batch(link, reply, idx, results, op, what)
        finally:
            for wid in order:
                links[wid].lock.release()
        return results

    def _unpack_batch(
        self, link: WorkerLink, reply: Any, idx: list[int], results: list[Any], op: str, what: str
    ) -> None:
        if not isinstance(reply, list) or not reply:
            self._fill(results, idx, self._protocol_error(link, what, reply))
            return
        if reply[0] != "ok":
            self._fill(results, idx, self._reply_error(link, reply, what))
            return
        if op == "step_many":
            self._unpack_columns(link, reply, idx, results, what)
            return
        items = reply[1]
        if not isinstance(items, list) or len(items) != len(idx):
            self._fill(results, idx, self._protocol_error(link, what))
            return
        limit = self.limits.max_output_chars
        for i, item in zip(idx, items, strict=True):
            try:
                if not isinstance(item, list) or not item:
                    raise self._protocol_error(link, what)
                if item[0] != "ok":
                    raise error_from_reply(item, what)
                results[i] = check_step_reply(item[1], limit) if op == "step_many" else check_reset_reply(item[1], limit)
            except SandboxError as exc:
                results[i] = exc

    def _unpack_columns(self, link: WorkerLink, reply: list[Any], idx: list[int], results: list[Any], what: str) -> None:
        """Check a columnar ``step_cols`` reply with whole-column operations and build the
        5-tuples with ``zip`` (this is the hot path of batched rollouts)."""
        n = len(idx)
        if len(reply) != 7 or not all(type(col) is list and len(col) == n for col in reply[1:6]) or type(reply[6]) is not list:
            self._fill(results, idx, self._protocol_error(link, what))
            return
        obs, rewards, terms, truncs, infos, errors = reply[1:]
        limit = self.limits.max_output_chars
        columns_ok = (
            set(map(type, obs)) <= {str}
            and set(map(type, rewards)) <= {float}
            # A finite sum of floats means every one is finite (inf and nan propagate);
            # a sum that overflows only sends the batch through the exact check.
            and (math.isfinite(sum(rewards)) or all(map(math.isfinite, rewards)))
            and set(map(type, terms)) <= {bool}
            and set(map(type, truncs)) <= {bool}
            and set(map(type, infos)) <= {dict}
            and (not obs or max(map(len, obs)) <= limit)
            # Non-empty infos are checked again as decoded; one that fails sends the batch
            # through the item-by-item checks below, which name it.
            and (not any(infos) or all(_info_size_ok(info, limit) for info in infos if info))
        )
        if columns_ok and n == len(results) and not errors:  # the whole batch, in order
            results[:] = zip(obs, rewards, terms, truncs, infos, strict=True)
        elif columns_ok:
            for i, result in zip(idx, zip(obs, rewards, terms, truncs, infos, strict=True), strict=True):
                results[i] = result
        else:  # find the offending items one by one
            for k, i in enumerate(idx):
                try:
                    results[i] = check_step_reply([obs[k], rewards[k], terms[k], truncs[k], infos[k]], limit)
                except SandboxError as exc:
                    results[i] = exc
        for err in errors:
            if type(err) is not list or not err or type(err[0]) is not int or not 0 <= err[0] < n:
                self._fill(results, idx, self._protocol_error(link, what))
                return
            results[idx[err[0]]] = error_from_reply(err[1:], what)
        if any(isinstance(results[idx[err[0]]], SandboxError) and results[idx[err[0]]].kind in _FATAL_KINDS for err in errors):
            fatal = next(results[idx[e[0]]] for e in errors if results[idx[e[0]]].kind in _FATAL_KINDS)
            self._fill(results, idx, self._reply_error(link, [protocol.ERR, fatal.kind, fatal.message, fatal.env_traceback], what))

    @staticmethod
    def _fill(results: list[Any], idx: list[int], exc: SandboxError) -> None:
        for i in idx:
            results[i] = exc

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
            f"worker {link.pid} broke the protocol during {what}: {_what_came(reply)}; it was killed"
        )
        link.death = err
        return err

    def _reply_error(self, link: WorkerLink, reply: Any, what: str) -> SandboxError:
        err = error_from_reply(reply, what)
        if err.kind in _FATAL_KINDS:
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


def _info_size_ok(info: dict[str, Any], limit: int) -> bool:
    try:
        _check_info_size(info, "step", limit)
    except EnvContractViolation:
        return False
    return True


def _what_came(reply: Any) -> str:
    """A short description of a reply that is not one the request allows (never its
    content: it comes from an untrusted worker)."""
    if reply is None:
        return "the reply is not one this request allows"
    if type(reply) is tuple:
        return "a step reply where this request needs another"
    if type(reply) is not list:
        return f"the reply is a {type(reply).__name__}, not a list"
    if not reply:
        return "the reply is an empty list"
    if reply[0] == protocol.OK:
        return f"an 'ok' reply of {len(reply)} item(s) with a value this request does not allow"
    return f"the reply starts with a {type(reply[0]).__name__}, not 'ok' or 'err'"


def _same_handles(handles: list[Any], previous: list[EnvHandle]) -> bool:
    """``handles == previous``, False where an element's comparison fails."""
    try:
        return handles == previous
    except Exception:  # an object whose == does not give a bool
        return False


def _check_seed(seed: Any) -> None:
    if seed is None:
        return
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise SandboxRequestError(f"seed must be an int or None, got {type(seed).__name__}")
    if not _SEED_RANGE[0] <= seed <= _SEED_RANGE[1]:
        raise SandboxRequestError(f"seed {seed} does not fit in 64 bits")


# --- the process-wide pool ------------------------------------------------------------------

_default: SandboxPool | None = None
_default_lock = threading.Lock()
watch_default_pool(lambda: _default is not None)  # prestart starts no zygote once it exists
_close_at_exit_registered = False


def default_pool() -> SandboxPool:
    """The process-wide pool (created on first use from the ``[spade.sandbox]`` settings of
    the active configuration; closed at interpreter exit)."""
    global _default, _close_at_exit_registered
    with _default_lock:
        if _default is None or _default.closed:
            if configures_default_sandbox():
                # The defaults of [spade.sandbox] (SandboxSettings), without loading the
                # pydantic configuration model for them (a fresh interpreter's first
                # gym.make of a stored environment comes through here).
                _default = SandboxPool(SandboxLimits())
            else:
                from spade_core.config import load_config

                settings = load_config().sandbox
                limits = SandboxLimits(
                    call_timeout_s=settings.call_timeout_s,
                    memory_mb=settings.memory_mb,
                    cpu_seconds=settings.cpu_seconds,
                    worker_cpu_seconds=settings.worker_cpu_seconds,
                )
                _default = SandboxPool(limits, backend=settings.backend, allow_insecure=settings.allow_insecure)
            if not _close_at_exit_registered:
                atexit.register(_close_default_at_exit)
                _close_at_exit_registered = True
        return _default


def _close_default_at_exit() -> None:
    pool = _default
    if pool is not None:
        pool.close(wait=False)


def _forget_default_in_child() -> None:
    """After ``os.fork``, in the child: the default pool's workers and zygote are the
    parent's. The child closes its copies of their descriptors without a word to them (its
    exit must not close the parent's pool) and makes a pool of its own when it needs one."""
    global _default, _default_lock
    _default_lock = threading.Lock()  # another thread may have held it at the fork
    pool, _default = _default, None
    if pool is not None:
        pool.forget()


os.register_at_fork(after_in_child=_forget_default_in_child)
