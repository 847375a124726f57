r"""The base class of tool-use environments (reference format, standard library plus the
action parser of ``spade_core``).

A tool-use environment is a scripted conversation with a user who asks for several things
in turn; the agent fulfils each request by calling tools that read and change a hidden
state, then answers. A subclass provides three things:

* ``tools`` — OpenAI-format schemas, one per tool (``{"type": "function", "function":
  {"name", "description", "parameters": {"type": "object", "properties", "required"}}}``);
* one method ``tool_<name>(self, **arguments)`` per schema. Parameters without a default
  must be listed in ``required``, parameters with a default must not; the class is
  checked when it is created (:class:`ToolSchemaError` names every mismatch). A tool
  returns any JSON-serialisable value, or raises :class:`ToolError` for an expected
  failure (insufficient funds, no such file): the agent sees the message and the state
  must be left unchanged;
* ``build(self) -> list[Turn]`` — fills ``self.state`` (one JSON-serialisable dict that
  holds everything the grader compares) using ``self.rng`` (seeded by ``reset``), and
  returns the user's turns. Each :class:`Turn` carries the user message, the reference
  calls that fulfil it, optionally a state predicate and strings the agent's answer must
  contain.

Actions are agent messages holding zero or more ``<tool_call>{"name": .., "arguments":
{..}}</tool_call>`` tags and optionally one ``<answer>...</answer>``. Malformed calls,
unknown tools and bad arguments produce an error observation, never an exception.

Grading. At ``reset`` the reference calls are replayed turn by turn on a fresh instance
built from the same seed; the state after turn *k* is the target of turn *k*. (An
instance remembers the targets of its last few episodes, keyed by seed, built state and
reference calls, so resetting it on the same seed again replays nothing.) A turn
passes when the live state equals its target (keys in ``ignore_keys`` aside), its
predicate holds and every required output appears in the agent's answer. The reward is
the fraction of turns passed so far, so 1.0 exactly when every turn passed.

Turn advance (class attribute ``advance_on``):

* ``"check"`` — the turn ends as soon as it passes after a step, or when the agent
  answers (then it is graded as it stands);
* ``"reply"`` — the turn ends when the agent replies without a tool call, or answers.

The episode terminates after the last turn; ``max_steps`` truncates it.

This module is the base class and the one module tool-use sources import; its parts with
other reasons to change live beside it and are re-exported here: the declaration checker
(:mod:`spade_tooluse.declarations`), calls, outcomes and rendering
(:mod:`spade_tooluse.calls`) and the grading fast path, the targets' replay and cache
(:mod:`spade_tooluse.targets`).
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spade_core.actions import ToolCall, format_tool_calls, parse_tool_action
from spade_core.errors import ActionFormatError

# The parts of the tool-use base with reasons of their own to change, re-exported here:
# environments (and the sandbox, which loads this one module for them) import them from
# spade_tooluse.base.
from .calls import (
    MAX_RESULT_CHARS,  # noqa: F401 (re-exported)
    Outcome,
    ToolEnvError,
    ToolError,
    as_call,
    call,
    canonical,
    output_found,
    render_result,
    tool_response,
)
from .declarations import (
    JSON_TYPES,  # noqa: F401 (re-exported)
    ToolSchemaError,
    check_arguments,
    check_tool_declarations,
    function_schema,
)

# Environments written for the reference implementation subclass this; importable from
# here because ``spade_tooluse.base`` is the one module tool-use sources may import.
from .reference_base import ToolUseBaseEnv
from .state_copy import state_copy
from .targets import TARGET_CACHE_SIZE, TargetReplay  # noqa: F401 (TARGET_CACHE_SIZE: re-exported)

__all__ = [
    "ToolEnv",
    "ToolEnvError",
    "ToolError",
    "ToolSchemaError",
    "ToolUseBaseEnv",
    "Turn",
    "call",
    "function_schema",
]

#: Names environments of this domain use without importing them (bound in the sandbox by
#: ``spade_sandbox.prelude``): the reference designer's sources subclass ``ToolUseBaseEnv``
#: as its loader provides it.
SANDBOX_PRELUDE = ("ToolUseBaseEnv",)

ADVANCE_MODES = ("check", "reply")


@dataclass
class Turn:
    """One user request.

    ``calls`` are the reference tool calls that fulfil it (``call(...)`` values or
    ``{"name", "arguments"}`` dicts), replayed to compute the target state. ``check`` is an
    optional predicate over the live state; ``outputs`` are strings that must appear
    (case-insensitively) in the agent's answer; ``answer`` is the reference answer text
    (defaults to the outputs joined, or "Done.").
    """

    user: str
    calls: list[Any] = field(default_factory=list)
    check: Callable[[dict[str, Any]], bool] | None = None
    outputs: list[str] = field(default_factory=list)
    answer: str | None = None

    def reference_answer(self) -> str:
        if self.answer is not None:
            return self.answer
        return "; ".join(self.outputs) if self.outputs else "Done."


# --- the base class -------------------------------------------------------------------


class ToolEnv(TargetReplay):
    """Base class of multi-turn tool-use environments (see the module docstring).

    Attribute and method names starting with ``_te_`` are the base's own; subclasses
    keep their helpers under other names.
    """

    #: OpenAI-format schemas of the tools; checked against ``tool_*`` methods.
    tools: list[dict[str, Any]] = []
    #: One sentence shown before the first request (who the agent is serving, what system).
    description: str = "You are an assistant operating a software system through tools."
    #: "check": a turn ends when it passes (or on <answer>); "reply": when the agent replies
    #: without a tool call (or on <answer>).
    advance_on: str = "reply"
    #: Steps (agent messages) before the episode is truncated (the reference trainer plays
    #: at most 25 turns; validation rejects episodes that run longer on their own).
    max_steps: int = 20
    #: Top-level state keys that the state comparison skips (scratch, logs).
    ignore_keys: tuple[str, ...] = ()

    _te_schemas: list[dict[str, Any]] = []
    # Derived from _te_schemas once per class (dispatch and the intro ran these per call).
    _te_schema_index: dict[str, dict[str, Any]] = {}
    _te_listing: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        has_methods = any(a.startswith("tool_") for a in dir(cls))
        if cls.__dict__.get("tools") is not None or has_methods:
            cls._te_schemas = check_tool_declarations(cls)
        cls._te_schema_index = {s["function"]["name"]: s for s in cls._te_schemas}
        cls._te_listing = None  # made by the first _te_intro of this class
        if cls.advance_on not in ADVANCE_MODES:
            raise ToolSchemaError(cls.__name__, [f"advance_on must be one of {ADVANCE_MODES}, got {cls.advance_on!r}"])

    def __init__(self) -> None:
        self.state: dict[str, Any] = {}
        self.rng = random.Random(0)
        self.seed: int | None = None
        self.turns: list[Turn] = []
        self._te_targets: list[dict[str, Any]] = []
        self._te_target_cache: dict[tuple[int, str, str], list[dict[str, Any]]] = {}
        self._te_built_state = ""
        self._te_turn = 0
        self._te_passed: list[bool] = []
        self._te_steps = 0
        self._te_turn_answers: list[str] = []
        self._te_done = False

    # -- subclass hook ---------------------------------------------------------------

    def build(self) -> list[Turn]:
        """Fill ``self.state`` using ``self.rng`` and return the user's turns."""
        raise NotImplementedError(f"{type(self).__name__} must implement build()")

    # -- public contract -------------------------------------------------------------

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """The OpenAI-format schemas of this environment's tools (a copy)."""
        return copy.deepcopy(type(self)._te_schemas)

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Start a new episode; the same seed gives the same state, turns and targets."""
        if seed is None:
            seed = random.SystemRandom().randrange(2**31)
        self._te_start(seed)
        self._te_targets = self._te_cached_targets(seed)
        intro = self._te_intro()
        return intro + "\n\n" + self._te_user_message(0), self._te_info(advanced=False, outcomes=[])

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Execute the calls of one agent message, then grade and advance as the mode says."""
        if not self.turns:
            raise ToolEnvError(f"{type(self).__name__}: step() called before reset()")
        if self._te_done:  # a step after the end pays nothing and changes nothing
            return "The episode is over.", 0.0, True, False, self._te_info(advanced=False, outcomes=[])
        self._te_steps += 1
        text = action if isinstance(action, str) else str(action)
        try:
            parsed = parse_tool_action(text)
        except ActionFormatError as exc:
            obs = (
                f"Error: could not parse your tool call: {exc}. Write each call as "
                '<tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>.'
            )
            return self._te_after(obs, [], answered=False, replied=False)
        outcomes = [self._te_dispatch(c) for c in parsed.calls]
        parts = [tool_response(o.name, o.text, error=o.error) for o in outcomes]
        answered = parsed.answer is not None
        if answered:
            self._te_turn_answers.append(parsed.answer or "")
        elif not parsed.calls:
            self._te_turn_answers.append(text)
        replied = not parsed.calls
        return self._te_after("\n".join(parts), outcomes, answered=answered, replied=replied)

    def solution(self) -> list[str]:
        """One action per turn: the turn's reference calls, then its reference answer."""
        if not self.turns:
            raise ToolEnvError(f"{type(self).__name__}: solution() called before reset()")
        return [
            format_tool_calls([as_call(c) for c in t.calls], answer=t.reference_answer())
            for t in self.turns
        ]

    def close(self) -> None:
        """Nothing to release; subclasses holding resources override this."""

    # -- internals -------------------------------------------------------------------

    def _te_start(self, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.state = {}
        turns = self.build()
        if not isinstance(turns, list) or not turns or not all(isinstance(t, Turn) for t in turns):
            raise ToolEnvError(f"{type(self).__name__}.build() must return a non-empty list of Turn")
        if not type(self)._te_schemas:
            raise ToolEnvError(f"{type(self).__name__} declares no tools")
        try:
            text = json.dumps(self.state, sort_keys=True)  # what _canonical does, keeping the text
        except (TypeError, ValueError) as exc:
            raise ToolEnvError(f"{type(self).__name__}.state is not JSON-serialisable: {exc}") from None
        self.state = json.loads(text)
        self._te_built_state = text
        self.turns = turns
        self._te_turn = 0
        self._te_passed = []
        self._te_steps = 0
        self._te_turn_answers = []
        self._te_done = False

    def _te_comparable(self, state: dict[str, Any]) -> dict[str, Any]:
        snap = canonical(state)
        for k in self.ignore_keys:
            snap.pop(k, None)
        return snap

    def _te_predicate(self, turn: Turn) -> bool:
        try:
            return bool(turn.check(state_copy(self.state))) if turn.check is not None else True
        except Exception:  # a predicate that crashes on an odd state is a failed check
            return False

    def _te_dispatch(self, c: ToolCall, *, rollback: bool = True) -> Outcome:
        """Run one call. With ``rollback`` (always, except in a throw-away replay) a tool
        that raises leaves ``self.state`` as it was before the call."""
        schemas = type(self)._te_schema_index
        schema = schemas.get(c.name)
        if schema is None:
            return Outcome(c.name, f"unknown tool {c.name!r}; available tools: {', '.join(schemas)}", "bad_call")
        problem = check_arguments(schema, c.arguments)
        if problem is not None:
            return Outcome(c.name, problem, "bad_call")
        method = getattr(self, "tool_" + c.name)
        before: Any = state_copy(self.state) if rollback else None  # state_copy: exactly copy.deepcopy, faster
        try:
            result = method(**c.arguments)
        except ToolError as exc:
            if rollback:
                self.state = before  # expected failures leave the state as it was
            return Outcome(c.name, str(exc) or "the tool failed", "tool_error")
        except Exception as exc:  # env bugs surface to the agent, never as a crash
            if rollback:
                self.state = before
            return Outcome(c.name, f"internal error in tool {c.name!r}: {type(exc).__name__}: {exc}", "internal")
        return Outcome(c.name, render_result(result))

    def _te_turn_passes(self) -> bool:
        turn = self.turns[self._te_turn]
        try:
            if self._te_comparable(self.state) != self._te_targets[self._te_turn]:
                return False
        except (TypeError, ValueError):
            return False
        if not self._te_predicate(turn):
            return False
        said = " ".join(self._te_turn_answers)
        return all(output_found(o, said) for o in turn.outputs)

    def _te_after(
        self, obs: str, outcomes: list[Outcome], *, answered: bool, replied: bool
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        passes = self._te_turn_passes()
        if self.advance_on == "check":
            ends = passes or answered
        else:
            ends = answered or replied
        advanced = False
        if ends:
            self._te_passed.append(passes)
            self._te_turn += 1
            self._te_turn_answers = []
            advanced = True
            if self._te_turn >= len(self.turns):
                self._te_done = True
                closing = "All requests handled. The conversation is over."
                obs = (obs + "\n\n" + closing).strip()
                return obs, self._te_progress(), True, False, self._te_info(advanced=True, outcomes=outcomes)
            obs = (obs + "\n\n" + self._te_user_message(self._te_turn)).strip()
        elif not obs:
            obs = (
                "No tool call found. Call a tool with <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call> "
                "or finish the request with <answer>...</answer>."
            )
        truncated = self._te_steps >= self.max_steps
        if truncated:
            self._te_done = True
        return obs, self._te_progress(), False, truncated, self._te_info(advanced=advanced, outcomes=outcomes)

    def _te_progress(self) -> float:
        return sum(self._te_passed) / len(self.turns) if self.turns else 0.0

    def _te_intro(self) -> str:
        cls = type(self)
        if cls.get_tool_schemas is not ToolEnv.get_tool_schemas:  # an override may vary per call
            listing = json.dumps(self.get_tool_schemas(), ensure_ascii=False)
        else:
            if cls._te_listing is None:
                cls._te_listing = json.dumps(self.get_tool_schemas(), ensure_ascii=False)
            listing = cls._te_listing
        return (
            f"{self.description}\n"
            f"Tools (OpenAI format): {listing}\n"
            'Call tools with <tool_call>{"name": "<tool>", "arguments": {...}}</tool_call> (several per message '
            "are allowed). When a request is complete, reply with <answer>...</answer>."
        )

    def _te_user_message(self, k: int) -> str:
        return f"User (request {k + 1} of {len(self.turns)}): {self.turns[k].user}"

    def _te_info(self, *, advanced: bool, outcomes: list[Outcome]) -> dict[str, Any]:
        return {
            "turn": min(self._te_turn, len(self.turns)),
            "turns_total": len(self.turns),
            "turns_passed": int(sum(self._te_passed)),
            "turn_results": list(self._te_passed),
            "advanced": advanced,
            "tool_errors": sum(1 for o in outcomes if o.error),
            "steps": self._te_steps,
        }
