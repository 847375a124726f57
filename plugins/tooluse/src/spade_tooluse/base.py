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
"""

from __future__ import annotations

import copy
import inspect
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from spade_core.actions import ToolCall, format_tool_calls, parse_tool_action
from spade_core.errors import ActionFormatError, SpadeError

# Environments written for the reference implementation subclass this; importable from
# here because ``spade_tooluse.base`` is the one module tool-use sources may import.
from .reference_base import ToolUseBaseEnv
from .state_copy import state_copy

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

#: JSON-Schema type names a tool parameter may declare.
JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "array", "object", "null"})
ADVANCE_MODES = ("check", "reply")
#: Episodes (seed, built state, reference calls) whose targets one instance remembers.
TARGET_CACHE_SIZE = 8
#: Longest tool result shown to the agent, in characters (keeps observations bounded).
MAX_RESULT_CHARS = 4000


class ToolError(Exception):
    """Raised by a tool for an expected failure; the agent sees ``str(error)``.

    A tool that raises must leave ``self.state`` unchanged.
    """


class ToolSchemaError(SpadeError, TypeError):
    """A tool-use environment class whose schemas and ``tool_*`` methods disagree.

    ``problems`` lists every mismatch found, each naming the class and the tool.
    """

    def __init__(self, class_name: str, problems: list[str]) -> None:
        super().__init__(f"{class_name}: invalid tool declarations: " + "; ".join(problems))
        self.class_name = class_name
        self.problems = list(problems)


class ToolEnvError(SpadeError):
    """A tool-use environment is inconsistent at ``reset`` (state not JSON, a reference
    call that crashes, a reference solution failing its own turn checks)."""


def call(tool: str, /, **arguments: Any) -> ToolCall:
    """A reference call for a :class:`Turn`: ``call("transfer", src="a", amount=5)``."""
    return ToolCall(name=tool, arguments=arguments)


def function_schema(
    name: str, description: str, properties: dict[str, dict[str, Any]] | None = None,
    required: list[str] | tuple[str, ...] = (),
) -> dict[str, Any]:
    """Build one OpenAI-format tool schema (a convenience for writing ``tools``)."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": dict(properties or {}), "required": list(required)},
        },
    }


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


# --- schema checking ------------------------------------------------------------------


def _normalise_schema(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The OpenAI-format form of one declared schema (a flat ``{"name", ...}`` form is
    accepted too), or an error message."""
    if not isinstance(raw, dict):
        return None, f"schema {raw!r} is not a dict"
    fn = raw.get("function") if raw.get("type") == "function" else raw
    if not isinstance(fn, dict):
        return None, f"schema {raw!r} has no 'function' object"
    name = fn.get("name")
    if not isinstance(name, str) or not name.isidentifier():
        return None, f"schema has no valid 'name' (got {name!r})"
    params = fn.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(params, dict) or params.get("type", "object") != "object":
        return None, f"tool {name!r}: 'parameters' must be a JSON-Schema object"
    props = params.get("properties", {})
    required = params.get("required", [])
    if not isinstance(props, dict) or not isinstance(required, list):
        return None, f"tool {name!r}: 'properties' must be an object and 'required' a list"
    description = fn.get("description", "")
    if not isinstance(description, str):
        return None, f"tool {name!r}: 'description' must be a string"
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": copy.deepcopy(props), "required": list(required)},
        },
    }, None


def _declared_types(prop: Any) -> list[str] | None:
    if not isinstance(prop, dict):
        return None
    t = prop.get("type")
    if t is None:
        return []  # untyped: anything goes
    types = [t] if isinstance(t, str) else t
    if not isinstance(types, list) or not all(isinstance(x, str) for x in types):
        return None
    return types


def check_tool_declarations(cls: type) -> list[dict[str, Any]]:
    """Check ``cls.tools`` against its ``tool_*`` methods; return the normalised schemas.

    Raises :class:`ToolSchemaError` listing every problem: malformed schemas, duplicate
    names, schemas without a method, methods without a schema, parameters missing from
    either side, ``**kwargs``/``*args``, required-ness that disagrees with defaults, and
    unknown JSON-Schema types.
    """
    problems: list[str] = []
    declared = getattr(cls, "tools", None)
    if not isinstance(declared, (list, tuple)):
        raise ToolSchemaError(cls.__name__, ["'tools' must be a list of tool schemas"])
    schemas: list[dict[str, Any]] = []
    seen: set[str] = set()
    for raw in declared:
        schema, err = _normalise_schema(raw)
        if err is not None or schema is None:
            problems.append(err or "invalid schema")
            continue
        name = schema["function"]["name"]
        if name in seen:
            problems.append(f"tool {name!r} declared twice")
            continue
        seen.add(name)
        schemas.append(schema)
    methods = {
        attr[len("tool_"):]: getattr(cls, attr)
        for attr in dir(cls)
        if attr.startswith("tool_") and callable(getattr(cls, attr))
    }
    for name in sorted(set(methods) - seen):
        problems.append(f"method tool_{name} has no schema in 'tools'")
    for schema in schemas:
        fn = schema["function"]
        name = fn["name"]
        method = methods.get(name)
        if method is None:
            problems.append(f"tool {name!r} has no method tool_{name}")
            continue
        props: dict[str, Any] = fn["parameters"]["properties"]
        required = fn["parameters"]["required"]
        for r in required:
            if r not in props:
                problems.append(f"tool {name!r}: required parameter {r!r} is not in 'properties'")
        for pname, prop in props.items():
            types = _declared_types(prop)
            if types is None:
                problems.append(f"tool {name!r}: parameter {pname!r} has an invalid schema")
            elif any(t not in JSON_TYPES for t in types):
                problems.append(
                    f"tool {name!r}: parameter {pname!r} has unknown type {prop.get('type')!r} "
                    f"(use one of {sorted(JSON_TYPES)})"
                )
        try:
            params = list(inspect.signature(method).parameters.values())[1:]  # drop self
        except (TypeError, ValueError):
            problems.append(f"tool_{name} has no inspectable signature")
            continue
        sig_names = set()
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                problems.append(f"tool_{name}: *args/**kwargs are not allowed; declare each parameter")
                continue
            sig_names.add(p.name)
            if p.name not in props:
                problems.append(f"tool {name!r}: method parameter {p.name!r} is missing from the schema")
                continue
            has_default = p.default is not p.empty
            if has_default and p.name in required:
                problems.append(f"tool {name!r}: parameter {p.name!r} has a default but is listed as required")
            if not has_default and p.name not in required:
                problems.append(f"tool {name!r}: parameter {p.name!r} has no default but is not listed as required")
        for pname in props:
            if pname not in sig_names:
                problems.append(f"tool {name!r}: schema parameter {pname!r} is not a parameter of tool_{name}")
    if problems:
        raise ToolSchemaError(cls.__name__, problems)
    return schemas


_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def _type_ok(value: Any, types: list[str]) -> bool:
    if not types:
        return True
    for t in types:
        py = _PY_TYPES[t]
        if isinstance(value, bool) and t in ("integer", "number"):
            continue  # JSON true is not a number
        if t == "integer" and isinstance(value, float) and value.is_integer():
            return True
        if isinstance(value, py):
            return True
    return False


def check_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """Why ``arguments`` do not fit ``schema`` (a readable message), or ``None`` if they do."""
    fn = schema["function"]
    props = fn["parameters"]["properties"]
    unknown = sorted(set(arguments) - set(props))
    if unknown:
        return f"unknown argument(s) {', '.join(unknown)} for tool {fn['name']!r} (accepted: {', '.join(props) or 'none'})"
    missing = [r for r in fn["parameters"]["required"] if r not in arguments]
    if missing:
        return f"missing required argument(s) {', '.join(missing)} for tool {fn['name']!r}"
    for k, v in arguments.items():
        types = _declared_types(props[k]) or []
        if not _type_ok(v, types):
            return f"argument {k!r} of tool {fn['name']!r} must be {' or '.join(types)}, got {type(v).__name__}"
        enum = props[k].get("enum") if isinstance(props[k], dict) else None
        if isinstance(enum, list) and v not in enum:
            return f"argument {k!r} of tool {fn['name']!r} must be one of {enum}"
    return None


def _canonical(value: Any) -> Any:
    """A JSON round trip: tuples become lists, keys strings; raises TypeError if impossible."""
    return json.loads(json.dumps(value, sort_keys=True))


def render_result(value: Any) -> Any:
    """A tool's result as shown to the agent: JSON values pass through, anything else
    becomes its ``str``; results longer than :data:`MAX_RESULT_CHARS` are cut."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        value = str(value)
        text = json.dumps(value, ensure_ascii=False)
    if len(text) > MAX_RESULT_CHARS:
        return text[:MAX_RESULT_CHARS] + f"... [truncated {len(text) - MAX_RESULT_CHARS} chars]"
    return value


def tool_response(name: str, content: Any, *, error: bool = False) -> str:
    """``<tool_response>{"name": .., "content"|"error": ..}</tool_response>``."""
    payload = {"name": name, ("error" if error else "content"): content}
    return "<tool_response>" + json.dumps(payload, ensure_ascii=False, sort_keys=False) + "</tool_response>"


def output_found(output: str, text: str) -> bool:
    """Whether ``output`` appears in ``text``, ignoring case and runs of whitespace; an
    output that starts or ends with a letter or digit must not continue a longer word or
    number there ("3" is not found in "13")."""
    needle = r"\s+".join(re.escape(w) for w in output.split())
    if not needle:
        return True
    left = r"(?<![0-9A-Za-z])" if output.strip()[0].isalnum() else ""
    right = r"(?![0-9A-Za-z])" if output.strip()[-1].isalnum() else ""
    return re.search(left + needle + right, text, flags=re.IGNORECASE) is not None


def _as_call(raw: Any) -> ToolCall:
    if isinstance(raw, ToolCall):
        return raw
    if isinstance(raw, dict) and isinstance(raw.get("name"), str):
        return ToolCall(raw["name"], dict(raw.get("arguments") or {}))
    if isinstance(raw, (tuple, list)) and len(raw) == 2 and isinstance(raw[0], str) and isinstance(raw[1], dict):
        return ToolCall(raw[0], dict(raw[1]))
    raise ToolEnvError(f"reference call {raw!r} is not call(name, **arguments), a (name, arguments) pair or a dict")


@dataclass
class _Outcome:
    """What happened to one call: shown to the agent and recorded in ``info``."""

    name: str
    #: The result value (JSON) or the error message.
    text: Any
    #: "ok", "tool_error" (the tool refused), "bad_call" (unknown tool, bad arguments) or
    #: "internal" (the tool crashed).
    kind: str = "ok"

    @property
    def error(self) -> bool:
        return self.kind != "ok"


# --- the base class -------------------------------------------------------------------


class ToolEnv:
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
        if self._te_done:
            return "The episode is over.", self._te_progress(), True, False, self._te_info(advanced=False, outcomes=[])
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
            format_tool_calls([_as_call(c) for c in t.calls], answer=t.reference_answer())
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

    def _te_cached_targets(self, seed: int) -> list[dict[str, Any]]:
        """The targets of this episode, replayed once per seed and built episode.

        Validation resets one instance on the same few seeds over a hundred times; the
        replay costs a second ``build()`` plus every reference call. An entry is reused
        only when the seed, the built state and the reference calls are all the same as
        when it was made (so an env whose build is not a function of the seed is replayed
        afresh, as before); the last :data:`TARGET_CACHE_SIZE` entries are kept.
        """
        key = self._te_episode_key(seed)
        try:
            cache = self._te_target_cache
        except AttributeError:  # a subclass __init__ that skipped ours
            cache = self._te_target_cache = {}
        if key is not None and key in cache:
            return cache[key]
        targets = self._te_replay_targets(seed)
        if key is not None:
            if len(cache) >= TARGET_CACHE_SIZE:
                del cache[next(iter(cache))]  # the oldest entry
            cache[key] = targets
        return targets

    def _te_episode_key(self, seed: int) -> tuple[int, str, str] | None:
        """What the targets are a function of: seed, built state, reference calls (as
        text); ``None`` when the calls have no faithful text form."""
        try:
            calls = repr([t.calls for t in self.turns])
        except Exception:  # a reference call whose repr fails: replay every time
            return None
        if " at 0x" in calls:  # default object reprs name addresses, not values
            return None
        return (seed, self._te_built_state, calls)

    def _te_replay_targets(self, seed: int) -> list[dict[str, Any]]:
        """Replay the reference calls on a fresh instance; the state after each turn.

        Reference calls almost never fail, so the first pass runs them without the
        per-call state snapshot. If any call does not succeed, that pass is thrown away
        and the replay starts again on another fresh instance with snapshots, which is
        the exact procedure; for an env whose build is a function of the seed (the
        contract of ``reset``) the targets and errors are the same either way.
        """
        targets = self._te_replay(seed, rollback=False)
        if targets is None:
            targets = self._te_replay(seed, rollback=True)
        return cast("list[dict[str, Any]]", targets)  # with rollback it never gives None

    def _te_replay(self, seed: int, *, rollback: bool) -> list[dict[str, Any]] | None:
        """The replay proper; ``None`` when ``rollback`` is off and a call did not succeed."""
        twin = type(self)()
        twin._te_start(seed)
        targets = []
        for k, turn in enumerate(twin.turns):
            for raw in turn.calls:
                c = _as_call(raw)
                outcome = twin._te_dispatch(c, rollback=rollback)
                if outcome.kind != "ok" and not rollback:
                    return None
                if outcome.kind in ("bad_call", "internal"):
                    raise ToolEnvError(
                        f"{type(self).__name__}: reference call {c.name}({c.arguments}) of turn {k} failed: {outcome.text}"
                    )
            state = twin._te_comparable(twin.state)
            if turn.check is not None and not twin._te_predicate(turn):
                raise ToolEnvError(f"{type(self).__name__}: the reference calls of turn {k} fail the turn's check")
            targets.append(state)
        return targets

    def _te_comparable(self, state: dict[str, Any]) -> dict[str, Any]:
        snap = _canonical(state)
        for k in self.ignore_keys:
            snap.pop(k, None)
        return snap

    def _te_predicate(self, turn: Turn) -> bool:
        try:
            return bool(turn.check(state_copy(self.state))) if turn.check is not None else True
        except Exception:  # a predicate that crashes on an odd state is a failed check
            return False

    def _te_dispatch(self, c: ToolCall, *, rollback: bool = True) -> _Outcome:
        """Run one call. With ``rollback`` (always, except in a throw-away replay) a tool
        that raises leaves ``self.state`` as it was before the call."""
        schemas = type(self)._te_schema_index
        schema = schemas.get(c.name)
        if schema is None:
            return _Outcome(c.name, f"unknown tool {c.name!r}; available tools: {', '.join(schemas)}", "bad_call")
        problem = check_arguments(schema, c.arguments)
        if problem is not None:
            return _Outcome(c.name, problem, "bad_call")
        method = getattr(self, "tool_" + c.name)
        before: Any = state_copy(self.state) if rollback else None  # state_copy: exactly copy.deepcopy, faster
        try:
            result = method(**c.arguments)
        except ToolError as exc:
            if rollback:
                self.state = before  # expected failures leave the state as it was
            return _Outcome(c.name, str(exc) or "the tool failed", "tool_error")
        except Exception as exc:  # env bugs surface to the agent, never as a crash
            if rollback:
                self.state = before
            return _Outcome(c.name, f"internal error in tool {c.name!r}: {type(exc).__name__}: {exc}", "internal")
        return _Outcome(c.name, render_result(result))

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
        self, obs: str, outcomes: list[_Outcome], *, answered: bool, replied: bool
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

    def _te_info(self, *, advanced: bool, outcomes: list[_Outcome]) -> dict[str, Any]:
        return {
            "turn": min(self._te_turn, len(self.turns)),
            "turns_total": len(self.turns),
            "turns_passed": int(sum(self._te_passed)),
            "turn_results": list(self._te_passed),
            "advanced": advanced,
            "tool_errors": sum(1 for o in outcomes if o.error),
            "steps": self._te_steps,
        }
