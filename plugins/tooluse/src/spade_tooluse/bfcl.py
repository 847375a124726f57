r"""The BFCL-v4 multi-turn suite served as tool-use environments.

Every one of the 800 multi-turn entries of the installed ``bfcl-eval`` package (categories
``base``, ``miss_func``, ``miss_param``, ``long_context``) becomes a :class:`BfclEnv` in the
reference format. The stateful API classes are the package's own (trusted code, run in
this process); this module only reads them, drives them and grades.

Episode protocol (the benchmark's, in our tag format):

* the first observation lists the tools visible now (OpenAI format) and the first user
  message; in ``miss_func`` entries some functions are withheld until the turn the
  benchmark reveals them (that turn has no user message; the benchmark's "new functions"
  prompt is shown instead);
* each agent message's ``<tool_call>`` tags are executed, in order, on this episode's API
  instances; results are formatted as the benchmark formats them;
* a message without tool calls (or one holding ``<answer>``, or one whose tool calls do
  not parse) ends the user turn, as the benchmark ends a turn on an empty or undecodable
  response; more than :data:`STEP_LIMIT` calling messages in one turn force-terminate the
  episode (the benchmark fails such entries).

Grading at the end of each turn matches the benchmark's multi-turn checker: the turn's
ground-truth calls run on a second, answer-driven set of instances; when that list is not
empty, the turn passes if the agent made at least one call in it, every public attribute
of every answer-driven instance equals the agent-driven one, and every ground-truth result
of the turn is found (as a multiset, in any order) among all results the agent obtained
so far. ``info["bfcl_valid"]`` is the entry's verdict (every graded turn passed). The
reward is the fraction of graded turns passed before the first failure, so 1.0 exactly
when the checker would accept the entry.

``python -m spade_tooluse.bfcl`` replays every entry's ground truth and measures agreement
with the official checker on mutated trajectories.
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import json
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from spade_core.actions import ToolCall, format_tool_calls, parse_tool_action
from spade_core.errors import ActionFormatError, SpadeError

CATEGORIES: tuple[str, ...] = ("base", "miss_func", "miss_param", "long_context")
#: Calling messages allowed per user turn before the episode is force-terminated (the
#: benchmark's limit).
STEP_LIMIT = 20
#: Function names the benchmark's executor refuses to run.
REFUSED_NAMES = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})
#: What the benchmark says when it reveals withheld functions.
REVEAL_MESSAGE = "I have updated some more functions you can choose from. What about now?"
#: Classes whose instances need no initial configuration.
STATELESS = frozenset({"MathAPI"})
_API_PACKAGE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"
_API_MODULES = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}


class BfclDataError(SpadeError):
    """The BFCL data or API classes are missing or not as expected (``bfcl-eval`` not
    installed, an unknown entry id, a ground-truth call that is not a literal call)."""


# --- data -------------------------------------------------------------------------------


def data_dir() -> Path:
    """The ``data`` folder of the installed ``bfcl_eval`` package."""
    try:
        import bfcl_eval
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise BfclDataError(
            "the BFCL suite needs the 'bfcl-eval' package (pip install --no-deps bfcl-eval mpmath)"
        ) from exc
    return Path(bfcl_eval.__file__).parent / "data"


@dataclass(frozen=True)
class BfclEntry:
    """One multi-turn entry with its ground truth."""

    id: str
    category: str
    #: User messages per turn (an empty list on a reveal turn).
    questions: tuple[tuple[str, ...], ...]
    initial_config: dict[str, Any]
    involved_classes: tuple[str, ...]
    #: Turn index -> names of functions withheld until that turn.
    missed_functions: dict[int, tuple[str, ...]]
    ground_truth: tuple[tuple[str, ...], ...]

    @property
    def long_context(self) -> bool:
        return "long_context" in self.category

    def raw(self) -> dict[str, Any]:
        """The entry in the benchmark's own shape (what its checker reads)."""
        return {
            "id": self.id,
            "initial_config": copy.deepcopy(self.initial_config),
            "involved_classes": list(self.involved_classes),
        }


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise BfclDataError(f"BFCL data file {path.name} not found in the installed bfcl-eval package")
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@cache
def _load_category(category: str) -> tuple[BfclEntry, ...]:
    if category not in CATEGORIES:
        raise BfclDataError(f"unknown BFCL multi-turn category {category!r} (known: {', '.join(CATEGORIES)})")
    base = data_dir()
    questions = _read_jsonl(base / f"BFCL_v4_multi_turn_{category}.json")
    answers = {a["id"]: a["ground_truth"] for a in _read_jsonl(base / "possible_answer" / f"BFCL_v4_multi_turn_{category}.json")}
    out = []
    for q in questions:
        if q["id"] not in answers:
            raise BfclDataError(f"entry {q['id']} has no ground truth")
        out.append(
            BfclEntry(
                id=q["id"],
                category=f"multi_turn_{category}",
                questions=tuple(tuple(m["content"] for m in turn) for turn in q["question"]),
                initial_config=q.get("initial_config", {}),
                involved_classes=tuple(q["involved_classes"]),
                missed_functions={int(k): tuple(v) for k, v in q.get("missed_function", {}).items()},
                ground_truth=tuple(tuple(turn) for turn in answers[q["id"]]),
            )
        )
    return tuple(out)


def load_entries(categories: Iterable[str] = CATEGORIES) -> list[BfclEntry]:
    """Every entry of the given categories, in file order."""
    return [e for c in categories for e in _load_category(c)]


@cache
def _entry_index() -> dict[str, BfclEntry]:
    return {e.id: e for e in load_entries()}


def get_entry(entry_id: str) -> BfclEntry:
    try:
        return _entry_index()[entry_id]
    except KeyError:
        raise BfclDataError(f"no BFCL multi-turn entry {entry_id!r}") from None


@cache
def _function_docs(class_name: str) -> tuple[dict[str, Any], ...]:
    return tuple(_read_jsonl(data_dir() / "multi_turn_func_doc" / f"{_API_MODULES[class_name]}.json"))


_TYPE_MAP = {"dict": "object", "float": "number", "tuple": "array"}


def _to_json_schema(node: Any) -> Any:
    """BFCL's parameter dialect ("dict", "float", "any", ...) in JSON-Schema words."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for k, v in node.items():
            if k == "type" and isinstance(v, str):
                if v == "any":
                    continue
                out[k] = _TYPE_MAP.get(v, v)
            elif k == "properties" and isinstance(v, dict):
                out[k] = {name: _to_json_schema(p) for name, p in v.items()}
            else:
                out[k] = _to_json_schema(v)
        return out
    if isinstance(node, list):
        return [_to_json_schema(x) for x in node]
    return node


def openai_schema(doc: dict[str, Any]) -> dict[str, Any]:
    """One BFCL function document as an OpenAI-format tool schema."""
    params = _to_json_schema(doc.get("parameters", {"type": "dict", "properties": {}}))
    params["type"] = "object"
    return {"type": "function", "function": {"name": doc["name"], "description": doc.get("description", ""), "parameters": params}}


# --- calls ------------------------------------------------------------------------------


def parse_call(text: str) -> tuple[str, list[Any], dict[str, Any]]:
    """``name(pos, key=value)`` with literal arguments -> (name, positional, keyword)."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise BfclDataError(f"ground-truth call {text!r} is not Python syntax: {exc.msg}") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise BfclDataError(f"ground-truth call {text!r} is not a plain function call")
    try:
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg is not None}
    except ValueError:
        raise BfclDataError(f"ground-truth call {text!r} has a non-literal argument") from None
    return node.func.id, args, kwargs


def call_string(c: ToolCall) -> str:
    """A tool call in the benchmark's decoded form, ``name(key=value, ...)``."""
    return f"{c.name}({', '.join(f'{k}={v!r}' for k, v in c.arguments.items())})"


def _format_result(value: Any) -> str:
    # The benchmark's executor: strings as they are, dicts as JSON when they can be.
    if type(value) is str:
        return value
    if type(value) is dict:
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


class ApiSet:
    """One set of API instances for an entry (agent-driven or answer-driven)."""

    def __init__(self, entry: BfclEntry) -> None:
        self.instances: dict[str, Any] = {}
        self.owner: dict[str, str] = {}  # method name -> class name; later classes win, as in the benchmark
        for class_name in entry.involved_classes:
            module_name = _API_MODULES.get(class_name)
            if module_name is None:
                raise BfclDataError(f"entry {entry.id}: unknown API class {class_name!r}")
            cls = getattr(importlib.import_module(f"{_API_PACKAGE}.{module_name}"), class_name)
            instance = cls()
            if class_name not in STATELESS:
                instance._load_scenario(
                    copy.deepcopy(entry.initial_config.get(class_name, {})), long_context=entry.long_context
                )
            self.instances[class_name] = instance
            for name, _ in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not name.startswith("_"):
                    self.owner[name] = class_name

    def method(self, name: str) -> Any:
        return getattr(self.instances[self.owner[name]], name)

    def execute(self, c: ToolCall) -> str:
        """Run one call; the result (or the error) as the benchmark's executor renders it."""
        if c.name in REFUSED_NAMES:
            return f"Error during execution: Function call {c.name} is not allowed."
        if c.name not in self.owner:
            return f"Error during execution: name '{c.name}' is not defined"
        try:
            return _format_result(self.method(c.name)(**c.arguments))
        except Exception as exc:  # the benchmark reports any failure of a call as its result
            return f"Error during execution: {exc}"

    def to_tool_call(self, text: str) -> ToolCall:
        """A ground-truth call string as a keyword tool call (positionals named by signature)."""
        name, args, kwargs = parse_call(text)
        if args:
            if name not in self.owner:
                raise BfclDataError(f"ground-truth call {text!r} names no known function")
            params = [p for p in inspect.signature(self.method(name)).parameters.values()]
            for p, v in zip(params, args, strict=False):
                kwargs[p.name] = v
        return ToolCall(name, kwargs)

    def public_state(self, class_name: str) -> dict[str, Any]:
        return {k: v for k, v in vars(self.instances[class_name]).items() if not k.startswith("_")}


def state_differences(agent: ApiSet, truth: ApiSet) -> dict[str, list[str]]:
    """Per class, the public attributes where the agent's instance differs from the answer's."""
    out: dict[str, list[str]] = {}
    for class_name, t in truth.instances.items():
        a = agent.instances[class_name]
        bad = [k for k, v in vars(t).items() if not k.startswith("_") and getattr(a, k, _MISSING) != v]
        if bad:
            out[class_name] = bad
    return out


_MISSING = object()


def missing_results(expected: Sequence[str], observed: Sequence[str]) -> list[str]:
    """Items of ``expected`` not matched one-for-one by items of ``observed`` (any order)."""
    pool = list(observed)
    missing = []
    for item in expected:
        try:
            pool.remove(item)
        except ValueError:
            missing.append(item)
    return missing


@dataclass
class TurnVerdict:
    """The grade of one user turn."""

    index: int
    graded: bool
    passed: bool
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"turn": self.index, "graded": self.graded, "passed": self.passed, "reason": self.reason}


# --- the environment --------------------------------------------------------------------


@dataclass
class _Episode:
    agent: ApiSet
    truth: ApiSet
    turn: int = 0
    visible: list[str] = field(default_factory=list)  # visible function names, in order
    results: list[str] = field(default_factory=list)  # every agent call result so far
    calling_steps: int = 0  # calling messages in the current turn
    verdicts: list[TurnVerdict] = field(default_factory=list)
    done: bool = False
    force_terminated: bool = False


class BfclEnv:
    """One BFCL-v4 multi-turn entry as a reference-format environment.

    ``stop_on_failure`` ends the episode at the first failed graded turn (the benchmark's
    verdict is settled then).
    """

    def __init__(self, entry: BfclEntry | str, *, stop_on_failure: bool = True) -> None:
        self.entry = get_entry(entry) if isinstance(entry, str) else entry
        self.stop_on_failure = stop_on_failure
        self._ep: _Episode | None = None
        withheld = {n for names in self.entry.missed_functions.values() for n in names}
        docs = [d for c in self.entry.involved_classes for d in _function_docs(c)]
        self._docs = {d["name"]: d for d in docs}
        self._initially_visible = [d["name"] for d in docs if d["name"] not in withheld]

    # -- contract --------------------------------------------------------------------

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Fresh agent and answer instances from the entry's initial config (``seed`` is
        accepted for the contract; the entry itself is deterministic)."""
        self._ep = _Episode(agent=ApiSet(self.entry), truth=ApiSet(self.entry), visible=list(self._initially_visible))
        intro = (
            "You are an assistant that fulfils the user's requests by calling functions.\n"
            f"Functions (OpenAI format): {json.dumps(self.get_tool_schemas(), ensure_ascii=False)}\n"
            'Call functions with <tool_call>{"name": "<function>", "arguments": {...}}</tool_call>; several per '
            "message are allowed and run in order. When you have done all you can for the current request, reply "
            "without a tool call (for example <answer>...</answer>) to hand the turn back to the user."
        )
        return intro + "\n\n" + self._turn_prompt(0), self._info()

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        ep = self._require_episode()
        if ep.done:
            return "The episode is over.", self._reward(), True, False, self._info()
        try:
            parsed = parse_tool_action(action if isinstance(action, str) else str(action))
        except ActionFormatError as exc:
            # The benchmark ends the turn on an undecodable response.
            return self._end_turn(f"Could not parse your tool call ({exc}); the turn ends.")
        parts = []
        if parsed.calls:
            ep.calling_steps += 1
            for c in parsed.calls:
                result = ep.agent.execute(c)
                ep.results.append(result)
                parts.append(
                    "<tool_response>" + json.dumps({"name": c.name, "content": result}, ensure_ascii=False) + "</tool_response>"
                )
            if ep.calling_steps > STEP_LIMIT:
                ep.force_terminated = True
                ep.done = True
                ep.verdicts.append(TurnVerdict(ep.turn, True, False, f"force-terminated after {STEP_LIMIT} steps"))
                return "\n".join(parts) + "\n\nToo many steps in one turn; the episode ends.", self._reward(), True, False, self._info()
        if parsed.calls and parsed.answer is None:
            return "\n".join(parts), self._reward(), False, False, self._info()
        return self._end_turn("\n".join(parts))

    def solution(self) -> list[str]:
        """Per turn, one action with the turn's ground-truth calls and an answer that ends it."""
        ep = self._ep or _Episode(agent=ApiSet(self.entry), truth=ApiSet(self.entry))
        return [
            format_tool_calls([ep.agent.to_tool_call(t) for t in turn], answer="Done." if turn else "I cannot do that with the available functions.")
            for turn in self.entry.ground_truth
        ]

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """The functions visible now, OpenAI format."""
        names = self._ep.visible if self._ep is not None else self._initially_visible
        return [openai_schema(self._docs[n]) for n in names]

    def close(self) -> None:
        self._ep = None

    # -- internals -------------------------------------------------------------------

    def _require_episode(self) -> _Episode:
        if self._ep is None:
            raise BfclDataError(f"{self.entry.id}: step() called before reset()")
        return self._ep

    def _turn_prompt(self, k: int) -> str:
        ep = self._require_episode()
        revealed = self.entry.missed_functions.get(k, ())
        if revealed:
            ep.visible.extend(n for n in revealed if n not in ep.visible)
            schemas = [openai_schema(self._docs[n]) for n in revealed]
            return f"New functions (OpenAI format): {json.dumps(schemas, ensure_ascii=False)}\nUser: {REVEAL_MESSAGE}"
        return "\n".join(f"User: {m}" for m in self.entry.questions[k])

    def _grade(self, k: int) -> TurnVerdict:
        ep = self._require_episode()
        truth_calls = self.entry.ground_truth[k]
        expected = [ep.truth.execute(ep.truth.to_tool_call(t)) for t in truth_calls]
        if not truth_calls:
            return TurnVerdict(k, graded=False, passed=True)
        if ep.calling_steps == 0:
            return TurnVerdict(k, True, False, "no function call in a turn that needs one")
        diff = state_differences(ep.agent, ep.truth)
        if diff:
            where = "; ".join(f"{c}: {', '.join(attrs)}" for c, attrs in diff.items())
            return TurnVerdict(k, True, False, f"state differs from the answer's ({where})")
        missing = missing_results(expected, ep.results)
        if missing:
            return TurnVerdict(k, True, False, f"{len(missing)} expected result(s) not obtained")
        return TurnVerdict(k, True, True)

    def _end_turn(self, obs: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        ep = self._require_episode()
        verdict = self._grade(ep.turn)
        ep.verdicts.append(verdict)
        ep.turn += 1
        ep.calling_steps = 0
        failed = verdict.graded and not verdict.passed
        if ep.turn >= len(self.entry.ground_truth) or (failed and self.stop_on_failure):
            ep.done = True
            return (obs + "\n\nThe conversation is over.").strip(), self._reward(), True, False, self._info()
        return (obs + "\n\n" + self._turn_prompt(ep.turn)).strip(), self._reward(), False, False, self._info()

    def _reward(self) -> float:
        ep = self._require_episode()
        graded = sum(1 for t in self.entry.ground_truth if t)
        if graded == 0:
            return 1.0 if ep.done and not ep.force_terminated else 0.0
        passed = 0
        for v in ep.verdicts:
            if v.graded:
                if not v.passed:
                    break
                passed += 1
        return passed / graded

    def _info(self) -> dict[str, Any]:
        ep = self._require_episode()
        valid = ep.done and not ep.force_terminated and all(v.passed for v in ep.verdicts)
        return {
            "entry_id": self.entry.id,
            "turn": ep.turn,
            "turns_total": len(self.entry.ground_truth),
            "verdicts": [v.to_dict() for v in ep.verdicts],
            "bfcl_valid": bool(valid and len(ep.verdicts) == len(self.entry.ground_truth)),
        }


# --- trajectories -----------------------------------------------------------------------

#: A trajectory: per user turn, per agent message, the calls of that message.
Trajectory = list[list[list[ToolCall]]]


def ground_truth_trajectory(entry: BfclEntry) -> Trajectory:
    """The entry's answer as a trajectory: one message per turn holding every call."""
    apis = ApiSet(entry)
    return [[[apis.to_tool_call(t) for t in turn]] if turn else [] for turn in entry.ground_truth]


def trajectory_actions(trajectory: Trajectory) -> list[str]:
    """The agent messages that play ``trajectory``: each turn's messages, then a reply
    without calls that ends the turn."""
    out = []
    for turn in trajectory:
        for calls in turn:
            if calls:
                out.append(format_tool_calls(list(calls)))
        out.append("<answer>Done.</answer>")
    return out


def score_trajectory(entry: BfclEntry, trajectory: Trajectory) -> dict[str, Any]:
    """Play ``trajectory`` in a :class:`BfclEnv` to the end; the final ``info`` plus reward."""
    env = BfclEnv(entry, stop_on_failure=False)
    env.reset()
    reward: float = 0.0
    info: dict[str, Any] = {}
    for action in trajectory_actions(trajectory):
        _, reward, terminated, _, info = env.step(action)
        if terminated:
            break
    env.close()
    return {"reward": reward, **info}


# --- mutations (for checker agreement) ---------------------------------------------------

MUTATIONS = ("drop_call", "change_argument", "add_call", "swap_calls", "empty_turn", "split_steps")


def _perturb(value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + rng.choice([1, -1, 7])
    if isinstance(value, float):
        return round(value * 1.5 + 1.0, 3)
    if isinstance(value, str):
        return value + rng.choice(["_x", "2", ".bak"]) if value else "x"
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    if isinstance(value, dict):
        return {**value, "x": 1}
    return "x"


def mutate(trajectory: Trajectory, kind: str, rng: random.Random) -> Trajectory | None:
    """A copy of ``trajectory`` with one deliberate change, or ``None`` when ``kind`` does
    not apply (no call to drop, no two calls to swap, ...)."""
    t = [[list(step) for step in turn] for turn in trajectory]
    slots = [(i, j, k) for i, turn in enumerate(t) for j, step in enumerate(turn) for k in range(len(step))]
    if not slots:
        return None
    if kind == "drop_call":
        i, j, k = rng.choice(slots)
        del t[i][j][k]
    elif kind == "change_argument":
        with_args = [s for s in slots if t[s[0]][s[1]][s[2]].arguments]
        if not with_args:
            return None
        i, j, k = rng.choice(with_args)
        c = t[i][j][k]
        key = rng.choice(sorted(c.arguments))
        t[i][j][k] = ToolCall(c.name, {**c.arguments, key: _perturb(c.arguments[key], rng)})
    elif kind == "add_call":
        i, j, k = rng.choice(slots)
        extra = t[i][j][k]
        ti = rng.randrange(len(t))
        if not t[ti]:
            t[ti] = [[]]
        tj = rng.randrange(len(t[ti]))
        t[ti][tj].insert(rng.randint(0, len(t[ti][tj])), extra)
    elif kind == "swap_calls":
        pairs = [(i, j) for i, turn in enumerate(t) for j, step in enumerate(turn) if len(step) >= 2]
        if not pairs:
            return None
        i, j = rng.choice(pairs)
        a, b = rng.sample(range(len(t[i][j])), 2)
        t[i][j][a], t[i][j][b] = t[i][j][b], t[i][j][a]
    elif kind == "empty_turn":
        nonempty = [i for i, turn in enumerate(t) if any(turn)]
        i = rng.choice(nonempty)
        t[i] = []
    elif kind == "split_steps":
        i, j, _ = rng.choice(slots)
        # One call per message, within the benchmark's per-turn message limit (its inference
        # loop force-terminates beyond it, which its checker function never sees).
        room = STEP_LIMIT - (len(t[i]) - 1)
        calls = t[i][j]
        size = max(1, -(-len(calls) // room))
        t[i][j:j + 1] = [calls[n:n + size] for n in range(0, len(calls), size)]
    else:
        raise ValueError(f"unknown mutation {kind!r} (known: {', '.join(MUTATIONS)})")
    return t


def official_verdict(entry: BfclEntry, trajectory: Trajectory, *, tag: str) -> bool:
    """The installed benchmark's own multi-turn checker on ``trajectory``.

    ``tag`` must be unique per call: the benchmark caches API instances in its module
    globals by model name and entry id (they are removed again afterwards).
    """
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    decoded = [[[call_string(c) for c in step] for step in turn if step] for turn in trajectory]
    model_name = f"spade_{tag}"
    try:
        result = multi_turn_checker(
            decoded, [list(t) for t in entry.ground_truth], entry.raw(), entry.category, model_name
        )
    finally:
        g = vars(multi_turn_utils)
        for key in [k for k in g if k.startswith(model_name)]:
            del g[key]
    return bool(result["valid"])


# --- the suite --------------------------------------------------------------------------


@dataclass
class SuiteReport:
    """Figures of one suite run (JSON-serialisable through :meth:`to_dict`)."""

    entries: int = 0
    replay_passed: int = 0
    replay_failures: list[str] = field(default_factory=list)
    per_category: dict[str, list[int]] = field(default_factory=dict)  # category -> [passed, total]
    mutated: int = 0
    agreed: int = 0
    official_valid: int = 0
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    per_mutation: dict[str, list[int]] = field(default_factory=dict)  # kind -> [agreed, total]

    @property
    def agreement(self) -> float:
        return self.agreed / self.mutated if self.mutated else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "entries": self.entries,
            "replay_passed": self.replay_passed,
            "replay_failures": self.replay_failures,
            "per_category": self.per_category,
            "mutated": self.mutated,
            "agreed": self.agreed,
            "agreement": self.agreement,
            "official_valid": self.official_valid,
            "per_mutation": self.per_mutation,
            "disagreements": self.disagreements,
        }


def run_suite(
    categories: Sequence[str] = CATEGORIES,
    *,
    mutations: int = 200,
    seed: int = 0,
    progress: bool = False,
) -> SuiteReport:
    """Replay every entry's ground truth, then score ``mutations`` mutated trajectories with
    both this module and the official checker."""
    entries = load_entries(categories)
    report = SuiteReport(entries=len(entries))
    rng = random.Random(seed)
    from contextlib import nullcontext

    ctx: Any = nullcontext()
    if progress:
        from rich.progress import Progress

        ctx = Progress(transient=True)
    with ctx as bar:
        task = bar.add_task("ground-truth replay", total=len(entries)) if progress else None
        for entry in entries:
            r = score_trajectory(entry, ground_truth_trajectory(entry))
            ok = r["bfcl_valid"] and r["reward"] == 1.0
            cat = report.per_category.setdefault(entry.category, [0, 0])
            cat[1] += 1
            if ok:
                report.replay_passed += 1
                cat[0] += 1
            else:
                report.replay_failures.append(entry.id)
            if progress:
                bar.advance(task)
        task = bar.add_task("mutated trajectories", total=mutations) if progress else None
        n = 0
        while n < mutations:
            entry = rng.choice(entries)
            kind = MUTATIONS[n % len(MUTATIONS)]
            mutated = mutate(ground_truth_trajectory(entry), kind, rng)
            if mutated is None:
                continue
            ours = score_trajectory(entry, mutated)["bfcl_valid"]
            theirs = official_verdict(entry, mutated, tag=f"m{n}")
            report.mutated += 1
            report.official_valid += int(theirs)
            stats = report.per_mutation.setdefault(kind, [0, 0])
            stats[1] += 1
            if ours == theirs:
                report.agreed += 1
                stats[0] += 1
            else:
                report.disagreements.append({"entry": entry.id, "mutation": kind, "ours": ours, "official": theirs})
            n += 1
            if progress:
                bar.advance(task)
    return report


#: An agent: the chat so far (``{"role", "content"}`` dicts; the environment speaks as
#: ``user``) -> its next message.
Agent = Callable[[list[dict[str, str]]], str]


@dataclass
class AgentReport:
    """An agent's accuracy on the suite (the benchmark's figure: entries fully valid)."""

    entries: int = 0
    valid: int = 0
    mean_reward: float = 0.0
    per_category: dict[str, list[int]] = field(default_factory=dict)  # category -> [valid, total]
    results: list[dict[str, Any]] = field(default_factory=list)

    @property
    def accuracy(self) -> float:
        return self.valid / self.entries if self.entries else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"entries": self.entries, "valid": self.valid, "accuracy": self.accuracy,
                "mean_reward": self.mean_reward, "per_category": self.per_category, "results": self.results}


def play_entry(entry: BfclEntry, agent: Agent, *, max_messages: int = 200) -> dict[str, Any]:
    """One episode of ``agent`` on ``entry``; the final reward and verdict.

    ``max_messages`` bounds the agent's messages over the whole episode (the per-turn
    limit of the benchmark applies as well).
    """
    env = BfclEnv(entry)
    obs, _ = env.reset()
    chat = [{"role": "user", "content": obs}]
    reward, info, messages = 0.0, {"bfcl_valid": False}, 0
    while messages < max_messages:
        action = agent([dict(m) for m in chat])
        messages += 1
        obs, reward, terminated, truncated, info = env.step(action if isinstance(action, str) else str(action))
        chat += [{"role": "assistant", "content": str(action)}, {"role": "user", "content": obs}]
        if terminated or truncated:
            break
    env.close()
    return {"entry": entry.id, "category": entry.category, "reward": reward, "valid": bool(info.get("bfcl_valid")),
            "messages": messages}


def evaluate_agent(
    agent: Agent,
    categories: Sequence[str] = CATEGORIES,
    *,
    limit: int | None = None,
    progress: bool = False,
) -> AgentReport:
    """Play ``agent`` on every entry of ``categories`` (the first ``limit`` of each)."""
    entries = [e for c in categories for e in load_entries([c])[:limit]]
    report = AgentReport(entries=len(entries))
    total_reward = 0.0
    bar: Any = None
    if progress:
        from rich.progress import Progress

        bar = Progress(transient=True)
        bar.start()
        task = bar.add_task("agent on BFCL-v4 multi-turn", total=len(entries))
    try:
        for entry in entries:
            r = play_entry(entry, agent)
            report.results.append(r)
            total_reward += r["reward"]
            stats = report.per_category.setdefault(entry.category, [0, 0])
            stats[1] += 1
            if r["valid"]:
                report.valid += 1
                stats[0] += 1
            if bar is not None:
                bar.advance(task)
    finally:
        if bar is not None:
            bar.stop()
    report.mean_reward = total_reward / len(entries) if entries else 0.0
    return report


def suite_for_plugin(*, agent: Agent | None = None, **options: Any) -> dict[str, Any]:
    """The ``bfcl_v4_multi_turn`` evaluation suite entry point (JSON result).

    With ``agent``, the agent's accuracy (:func:`evaluate_agent`; options ``categories``,
    ``limit``); without, the suite's self-check (:func:`run_suite`: ground-truth replay and
    agreement with the official checker; options ``categories``, ``mutations``, ``seed``).
    """
    if agent is not None:
        return evaluate_agent(agent, **options).to_dict()
    return run_suite(**options).to_dict()


def main(argv: Sequence[str] | None = None) -> int:
    import argparse
    import time

    from rich.console import Console
    from rich.table import Table

    parser = argparse.ArgumentParser(prog="python -m spade_tooluse.bfcl", description=__doc__.split("\n\n")[0])
    parser.add_argument("--categories", nargs="*", default=list(CATEGORIES), choices=CATEGORIES)
    parser.add_argument("--mutations", type=int, default=300, help="mutated trajectories compared with the official checker")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    console = Console()
    t0 = time.perf_counter()
    report = run_suite(args.categories, mutations=args.mutations, seed=args.seed, progress=True)
    elapsed = time.perf_counter() - t0
    table = Table(title="BFCL-v4 multi-turn suite")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_row("ground-truth replay", f"{report.replay_passed}/{report.entries} pass")
    for cat, (ok, total) in sorted(report.per_category.items()):
        table.add_row(f"  {cat}", f"{ok}/{total}")
    table.add_row(
        "agreement with official checker",
        f"{100 * report.agreement:.1f}% on {report.mutated} mutated trajectories",
    )
    for kind, (ok, total) in sorted(report.per_mutation.items()):
        table.add_row(f"  {kind}", f"{ok}/{total}")
    table.add_row("mutated trajectories the official checker accepts", str(report.official_valid))
    table.add_row("wall time", f"{elapsed:.1f} s")
    console.print(table)
    for d in report.disagreements[:10]:
        console.print(f"[yellow]disagreement[/]: {d}")
    for f in report.replay_failures[:10]:
        console.print(f"[red]replay failure[/]: {f}")
    return 0 if report.replay_passed == report.entries and not report.disagreements else 1


if __name__ == "__main__":
    raise SystemExit(main())
