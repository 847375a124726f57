"""The pool's batched calls: ``reset_many`` and ``step_many``, one message per worker, the
workers running in parallel, one result or error per item.

A mixin of :class:`~spade_sandbox.pool.SandboxPool`, kept apart because it changes with the
batch protocol (columnar step frames, the C splitter and decoder of ``spade_sandbox._fast``)
and its fast paths, not with the pool's single calls or worker lifecycle. It uses the
pool's links, limits and error helpers (annotated below) and defines nothing the pool
does not call through :meth:`reset_many` / :meth:`step_many`.
"""

from __future__ import annotations

import math
import operator
import threading
import time
from collections.abc import Sequence
from typing import Any

from . import native, protocol
from .channel import WorkerLink
from .errors import SandboxError, error_from_reply
from .handles import EnvHandle, check_seed, same_handles
from .limits import SandboxLimits
from .replies import (
    ResetResult,
    StepResult,
    check_reset_reply,
    check_step_reply,
    info_size_ok,
)

_WORKER_ID = operator.attrgetter("worker_id")
_INSTANCE_ID = operator.attrgetter("instance_id")
_CODE_HASH = operator.attrgetter("code_hash")
_FIRST = operator.itemgetter(0)
_SECOND = operator.itemgetter(1)
#: The C decoder of columnar step replies (None: the pure-Python path).
_decode_columns = native.fast.decode_step_columns if native.fast is not None else None
#: The C split of a step batch into checked columns (None: the pure-Python path).
_split_steps = native.fast.split_steps if native.fast is not None else None


class BatchCalls:
    """``reset_many`` / ``step_many`` of :class:`~spade_sandbox.pool.SandboxPool`."""

    # What the pool provides (set by SandboxPool.__init__ / defined on it).
    limits: SandboxLimits
    _lock: threading.RLock
    _links: dict[int, WorkerLink]
    _closed: bool
    _max_action_chars: int
    _max_output_chars: int
    _last_steps: tuple[list[EnvHandle], dict[int, list[int]], dict[int, WorkerLink], list[int] | None] | None

    def _check_action(self, action: Any) -> None: ...
    def _link(self, handle: EnvHandle) -> WorkerLink: ...
    def _lost(self, link: WorkerLink, handle: EnvHandle) -> SandboxError: ...
    def _bad_reply(self, link: WorkerLink, reply: Any, what: str) -> SandboxError: ...
    def _protocol_error(self, link: WorkerLink, what: str, reply: Any = None) -> SandboxError: ...
    def _reply_error(self, link: WorkerLink, reply: Any, what: str) -> SandboxError: ...

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
                    check_seed(arg)
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
        if last is not None and same_handles(handles, last[0]):
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
            and (not any(infos) or all(info_size_ok(info, limit) for info in infos if info))
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
        if any(isinstance(results[idx[err[0]]], SandboxError) and results[idx[err[0]]].worker_fatal for err in errors):
            fatal = next(results[idx[e[0]]] for e in errors if results[idx[e[0]]].worker_fatal)
            self._fill(results, idx, self._reply_error(link, [protocol.ERR, fatal.kind, fatal.message, fatal.env_traceback], what))

    @staticmethod
    def _fill(results: list[Any], idx: list[int], exc: SandboxError) -> None:
        for i in idx:
            results[i] = exc
