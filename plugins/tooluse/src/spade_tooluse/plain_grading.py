"""The grading internals of :class:`~spade_tooluse.base.ToolEnv` without any fast path.

:class:`PlainSemantics` is the algorithm the base class implements, written plainly: a
``copy.deepcopy`` of the state before every tool call, the targets replayed on a fresh
instance at every reset (with a snapshot before every reference call), the tool listing
serialised at every reset. The base class must behave exactly like it: tests check that
on random trajectories, and ``bench.bench_tooluse`` measures the base class against it.
Not meant for environments.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from .base import ToolEnv, ToolEnvError, ToolError, check_arguments, render_result
from .calls import Outcome, as_call

__all__ = ["PlainSemantics", "plain"]


class PlainSemantics(ToolEnv):
    """Mixed in before a :class:`~spade_tooluse.base.ToolEnv` subclass: its grading
    internals as first written, with no cache, no fast copy and no snapshot-free replay."""

    def _te_cached_targets(self, seed: int) -> list[dict[str, Any]]:
        return self._te_replay_targets(seed)

    def _te_replay_targets(self, seed: int) -> list[dict[str, Any]]:
        twin = type(self)()
        twin._te_start(seed)
        targets = []
        for k, turn in enumerate(twin.turns):
            for raw in turn.calls:
                c = as_call(raw)
                outcome = twin._te_dispatch(c)
                if outcome.kind in ("bad_call", "internal"):
                    raise ToolEnvError(
                        f"{type(self).__name__}: reference call {c.name}({c.arguments}) of turn {k} failed: {outcome.text}"
                    )
            state = twin._te_comparable(twin.state)
            if turn.check is not None and not twin._te_predicate(turn):
                raise ToolEnvError(f"{type(self).__name__}: the reference calls of turn {k} fail the turn's check")
            targets.append(state)
        return targets

    def _te_predicate(self, turn: Any) -> bool:
        try:
            return bool(turn.check(copy.deepcopy(self.state))) if turn.check is not None else True
        except Exception:
            return False

    def _te_dispatch(self, c: Any, **_: Any) -> Outcome:
        schemas = {s["function"]["name"]: s for s in type(self)._te_schemas}
        schema = schemas.get(c.name)
        if schema is None:
            return Outcome(c.name, f"unknown tool {c.name!r}; available tools: {', '.join(schemas)}", "bad_call")
        problem = check_arguments(schema, c.arguments)
        if problem is not None:
            return Outcome(c.name, problem, "bad_call")
        method = getattr(self, "tool_" + c.name)
        before = copy.deepcopy(self.state)
        try:
            result = method(**c.arguments)
        except ToolError as exc:
            self.state = before
            return Outcome(c.name, str(exc) or "the tool failed", "tool_error")
        except Exception as exc:
            self.state = before
            return Outcome(c.name, f"internal error in tool {c.name!r}: {type(exc).__name__}: {exc}", "internal")
        return Outcome(c.name, render_result(result))

    def _te_intro(self) -> str:
        listing = json.dumps(self.get_tool_schemas(), ensure_ascii=False)
        return (
            f"{self.description}\n"
            f"Tools (OpenAI format): {listing}\n"
            'Call tools with <tool_call>{"name": "<tool>", "arguments": {...}}</tool_call> (several per message '
            "are allowed). When a request is complete, reply with <answer>...</answer>."
        )


def plain(cls: type) -> type:
    """A subclass of the tool-use env class ``cls`` graded by :class:`PlainSemantics`
    (same name, so error messages match)."""
    return type(cls.__name__, (PlainSemantics, cls), {})
