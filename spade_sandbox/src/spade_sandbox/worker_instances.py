"""A worker's instance table: every instance of the one environment class it loaded, and
the answer to each request (``new``, ``reset``, ``step``, the batched ``step_cols``,
``reset_many`` / ``step_many``, ``call``, ``drop``).

Imported by the zygote: standard library and msgpack only.
"""

from __future__ import annotations

import math
import types
from itertools import repeat
from operator import contains, itemgetter
from typing import Any

from . import protocol
from .worker_replies import classify, plain_info, wire_call, wire_reset, wire_step

_first = itemgetter(0)


class Instances:
    """The environment instances of one worker and the request dispatch."""

    CALLABLE = frozenset({"solution", "get_tool_schemas", "close"})

    def __init__(self, cls: type, max_output_chars: int) -> None:
        self.cls = cls
        self.limit = max_output_chars
        self.live: dict[int, Any] = {}
        #: Bumped whenever ``live`` gains or loses an instance (keys the batch memo below).
        self.generation = 0
        #: The last fast batch: (live table, generation, ids, instances, their ``__dict__``s).
        self._last_batch: tuple[dict[int, Any], int, list[int], list[Any], list[Any]] | None = None
        #: ``cls.step`` when it is a plain function found on the class itself or a base
        #: (batches may then call it directly); ``None`` otherwise.
        self.step_function: Any = None
        #: ``native.fast.encode_step_columns`` in a worker serving with the C fast path
        #: (set by :func:`serve`): a batch of plain results is then answered with its
        #: msgpack payload encoded in one pass (``bytes``), byte for byte what packing the
        #: reply list gives.
        self.encode_columns: Any = None
        for klass in cls.__mro__:
            if "step" in klass.__dict__:
                found = klass.__dict__["step"]
                self.step_function = found if type(found) is types.FunctionType else None
                break
        if any("__getattribute__" in klass.__dict__ for klass in cls.__mro__[:-1]):
            self.step_function = None  # attribute access is the class's own business

    def handle(self, msg: list[Any]) -> list[Any] | bytes:
        op = msg[0]
        if op == "step":
            return self.step(msg[1], msg[2])
        if op == "reset":
            return self.reset(msg[1], msg[2])
        if op == "step_cols":
            return self.step_columns(msg[1], msg[2])
        if op == "step_many":
            return [protocol.OK, [self.step(i, a) for i, a in msg[1]]]
        if op == "reset_many":
            return [protocol.OK, [self.reset(i, s) for i, s in msg[1]]]
        if op == "new":
            return self.new(msg[1])
        if op == "call":
            return self.call(msg[1], msg[2])
        if op == "drop":
            return self.drop(msg[1])
        if op == "ping":
            return [protocol.OK, len(self.live)]
        return protocol.error_reply("request", f"unknown request {op!r}")

    def _get(self, iid: int) -> Any:
        inst = self.live.get(iid)
        if inst is None:
            raise KeyError(iid)
        return inst

    def new(self, iid: int) -> list[Any]:
        try:
            self.live[iid] = self.cls()
            self.generation += 1
        except BaseException as exc:
            return classify(exc, f"{self.cls.__name__}()")
        return [protocol.OK, None]

    def reset(self, iid: int, seed: Any) -> list[Any]:
        try:
            inst = self._get(iid)
        except KeyError:
            return protocol.error_reply("request", f"no instance {iid} in this worker")
        try:
            return [protocol.OK, wire_reset(inst.reset(seed=seed), self.limit)]
        except BaseException as exc:
            return classify(exc, "reset()")

    def step(self, iid: int, action: Any) -> list[Any]:
        inst = self.live.get(iid)
        if inst is None:
            return protocol.error_reply("request", f"no instance {iid} in this worker")
        try:
            r = inst.step(action)
            # The usual result needs no conversion: plain types, finite reward, no info.
            if type(r) is tuple and len(r) == 5:
                o, rw, te, tr, inf = r
                if (
                    type(o) is str
                    and len(o) <= self.limit
                    and type(rw) is float
                    and rw - rw == 0.0  # finite: inf - inf and nan - nan are nan
                    and (te is True or te is False)
                    and (tr is True or tr is False)
                    and type(inf) is dict
                    and not inf
                ):
                    return [protocol.OK, r]
            return [protocol.OK, wire_step(r, self.limit)]
        except BaseException as exc:
            return classify(exc, "step()")

    def step_columns(self, iids: list[int], actions: list[str]) -> list[Any] | bytes:
        """Batched step with a columnar reply: ``["ok", obs, rewards, terminated, truncated,
        infos, errors]`` where ``errors`` is ``[[index, *error_reply], ...]`` (in index
        order) and the columns hold neutral placeholders at those indexes.

        Every step runs first, in order; then the results are transposed with ``zip`` and
        checked with whole-column operations. Anything unusual (an error, a non-plain value)
        sends the batch through the per-item conversion of :func:`wire_step`. A batch that
        names one instance twice takes the per-item path from the start, so each result is
        converted before the next step of that instance can change what it refers to."""
        if len(set(iids)) != len(iids):
            return self._step_items(iids, actions)
        live = self.live
        out: list[Any] = []
        append = out.append
        bad: list[Any] = []
        insts = self._plain_steppers(iids, actions)
        if insts is not None:
            self._step_all(insts, actions, out, bad)
            iids = []  # all stepped
        for n, iid in enumerate(iids):
            inst = live.get(iid)
            if inst is None:
                bad.append([n, *protocol.error_reply("request", f"no instance {iid} in this worker")])
                append(None)
                continue
            try:
                append(inst.step(actions[n]))
            except BaseException as exc:
                bad.append([n, *classify(exc, "step()")])
                append(None)
        limit = self.limit
        if not bad and self.encode_columns is not None:
            encoded = self.encode_columns(out, limit)
            if encoded is not None:
                return encoded
        if not bad and out and set(map(type, out)) == {tuple} and set(map(len, out)) == {5}:
            obs, rewards, terms, truncs, infos = zip(*out, strict=True)
            if (
                set(map(type, obs)) == {str}
                and max(map(len, obs)) <= limit
                and set(map(type, rewards)) == {float}
                # A finite sum means every reward is finite (inf and nan propagate).
                and (math.isfinite(sum(rewards)) or all(map(math.isfinite, rewards)))
                and set(map(type, terms)) == {bool}
                and set(map(type, truncs)) == {bool}
                and set(map(type, infos)) == {dict}
                and (not any(infos) or all(map(plain_info, infos, repeat(limit))))
            ):
                return [protocol.OK, obs, rewards, terms, truncs, infos, []]
        return self._columns(out, bad)

    def _plain_steppers(self, iids: list[int], actions: list[str]) -> list[Any] | None:
        """The instances, when every one is known and ``step`` is the class's own plain
        function (not shadowed on the instance), so that :meth:`_step_all` may call it
        directly; otherwise ``None`` (step one by one)."""
        fn = self.step_function
        if fn is None or len(actions) != len(iids):
            return None
        last = self._last_batch
        if last is not None and last[0] is self.live and last[1] == self.generation and last[2] == iids:
            # The same instances as the last batch (the usual rollout): only the shadowing
            # check runs again, on their remembered attribute dicts.
            insts, attrs = last[3], last[4]
        else:
            try:
                insts = list(map(self.live.__getitem__, iids))
                attrs = list(map(vars, insts))
            except (KeyError, TypeError):  # unknown instance; instances without a __dict__
                return None
            self._last_batch = (self.live, self.generation, iids, insts, attrs)
        if any(map(contains, attrs, repeat("step"))):
            return None
        return insts

    def _step_all(self, insts: list[Any], actions: list[str], out: list[Any], bad: list[Any]) -> None:
        """Call the class's step function on every instance in order, appending each result
        to ``out`` (``None`` and an entry in ``bad`` where it raised). The calls run inside
        ``list.extend(map(...))``, with no interpreted loop around them: extend keeps what
        it appended before an exception, so the batch resumes after the failing item."""
        fn = self.step_function
        start, n = 0, len(insts)
        while start < n:
            try:
                out.extend(map(fn, insts[start:] if start else insts, actions[start:] if start else actions))
                return
            except BaseException as exc:
                failed = len(out)
                bad.append([failed, *classify(exc, "step()")])
                out.append(None)
                start = failed + 1

    def _columns(self, out: list[Any], errors: list[Any]) -> list[Any]:
        """Per-item conversion of step results (``None`` where ``errors`` already holds
        the item's error) into the columnar reply."""
        limit = self.limit
        obs: list[Any] = []
        rewards: list[Any] = []
        terms: list[Any] = []
        truncs: list[Any] = []
        infos: list[Any] = []
        failed = {e[0] for e in errors}
        for n, r in enumerate(out):
            o, rw, te, tr, inf = "", 0.0, False, False, {}
            if n not in failed:
                try:
                    o, rw, te, tr, inf = wire_step(r, limit)
                except BaseException as exc:
                    errors.append([n, *classify(exc, "step()")])
                    o, rw, te, tr, inf = "", 0.0, False, False, {}
            obs.append(o)
            rewards.append(rw)
            terms.append(te)
            truncs.append(tr)
            infos.append(inf)
        errors.sort(key=_first)
        return [protocol.OK, obs, rewards, terms, truncs, infos, errors]

    def _step_items(self, iids: list[int], actions: list[str]) -> list[Any]:
        """Columnar reply built one step at a time (each result converted at once)."""
        out: list[Any] = []
        errors: list[Any] = []
        for n, iid in enumerate(iids):
            inst = self.live.get(iid)
            if inst is None:
                errors.append([n, *protocol.error_reply("request", f"no instance {iid} in this worker")])
                out.append(None)
                continue
            try:
                o, rw, te, tr, inf = wire_step(inst.step(actions[n]), self.limit)
                # A flat info passes through unconverted: copy it, or a later step of the
                # same instance could change what this result reports.
                out.append((o, rw, te, tr, dict(inf)))
            except BaseException as exc:
                errors.append([n, *classify(exc, "step()")])
                out.append(None)
        return self._columns(out, errors)

    def call(self, iid: int, method: str) -> list[Any]:
        if method not in self.CALLABLE:
            return protocol.error_reply("request", f"method {method!r} may not be called")
        try:
            inst = self._get(iid)
        except KeyError:
            return protocol.error_reply("request", f"no instance {iid} in this worker")
        fn = getattr(inst, method, None)
        if fn is None and method == "get_tool_schemas":
            schemas = getattr(inst, "tool_schemas", None)
            fn = schemas if callable(schemas) else (lambda: schemas)
        if fn is None:
            if method == "close":
                return [protocol.OK, None]
            return protocol.error_reply("missing_method", f"{self.cls.__name__} does not define {method}()")
        try:
            return [protocol.OK, wire_call(method, fn(), self.limit)]
        except BaseException as exc:
            return classify(exc, f"{method}()")

    def drop(self, iid: int) -> list[Any]:
        inst = self.live.pop(iid, None)
        self.generation += 1
        if inst is not None:
            fn = getattr(inst, "close", None)
            if fn is not None:
                try:
                    fn()
                except BaseException as exc:
                    return classify(exc, "close()")
        return [protocol.OK, None]
