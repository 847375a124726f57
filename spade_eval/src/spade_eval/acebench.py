r"""ACEBench's agent category as an episode suite of ``spade eval`` (``--suite acebench_agent``).

ACEBench has no installable package, so this is an adapter written against the
benchmark's published data format and scoring rules, not its code:

* **Data** (``-o data=FOLDER``): a folder laid out as the benchmark's ``data_all/data_en``:
  ``data_agent_multi_step.json`` and ``data_agent_multi_turn.json`` (JSON lines: ``id``,
  ``question``, ``initial_config`` (per class, its starting attributes), ``function`` (the
  functions shown to the agent, JSON schemas), ``involved_classes``) and
  ``possible_answer/`` with the same names (``id``, ``ground_truth``: per class the expected
  end state, ``mile_stone``: the expected calls in order, or several such lists).
* **An episode**: ``agent_multi_step``: the question is the user's one message; each agent
  message's ``<tool_call>`` tags run in order on this episode's instances of the involved
  classes, a message without calls ends the episode. ``agent_multi_turn``: the question is
  the simulated user's instruction (``-o user=openai:URL#MODEL``); a message without calls
  goes to the user, whose reply holding ``finish conversation`` ends the episode.
* **Score** (the benchmark's ``agent_eval``): *end-state accuracy*: the involved classes'
  saved attributes must match the ground truth (same number of classes; each attribute of
  ours present in the answer; a dictionary attribute must hold each of the answer's keys
  with its value, anything else be equal); *process accuracy*: 1 for an entry with the right
  end state, else the share of milestones found in order among the agent's calls (each
  calling message written as the benchmark writes calls, ``[name(key='value', ...)]``, and
  compared as stripped text), the best over alternative milestone lists. The success rate
  (and the column ``ACE-multi-step``/``ACE-multi-turn``) is end-state accuracy; the mean
  return is process accuracy, except that an entry with a wrong end state whose milestones
  were all reached returns 0.999, so that it is not counted a success.

**Implemented** classes (:data:`CLASSES`), written here from the function descriptions:
``BaseApi`` (``wifi``, ``logged_in``), ``MessageApi`` (``inbox``; ``user_list`` maps names to
ids and is not compared) and ``ReminderApi`` (``reminder_list``); each starts from the
entry's ``initial_config`` (the benchmark's built-in default data of these classes is not
reproduced, so an involved class without its state there is unavailable, by name).
**Not implemented**, reported by name: the other classes (``FoodPlatform``, ``Travel``, ...;
an entry involving one fails at once and is listed as unavailable) and ACEBench's
``normal_*`` and ``special_*`` categories (asking for one is an error naming it).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spade_core.actions import parse_tool_action
from spade_core.errors import ActionFormatError
from spade_core.evaluation import EpisodeSuite, EvalItem, SuiteContext

from .dialogue import BenchmarkDataError, SimulatedUser, read_json_lines, resolve_user_backend

CATEGORIES = ("agent_multi_step", "agent_multi_turn")
COLUMNS = {"agent_multi_step": "ACE-multi-step", "agent_multi_turn": "ACE-multi-turn"}
FINISH = "finish conversation"
USER_OPENING = "Is there anything you need help with today?"
#: Agent messages per episode; at the limit the episode ends and is scored as it stands.
MAX_STEPS = {"agent_multi_step": 20, "agent_multi_turn": 40}
#: The return of a wrong end state whose milestones were all reached (not a success).
NEAR_MISS = 0.999

USER_PROMPT = """You are a user talking to an assistant that acts on your phone's apps for you.

Instruction: {instruction}

Rules:
- Write one line at a time: the user's next message only.
- Give only what the current step needs, but give all of it (a reminder's title, description and time, say).
- Never invent anything the instruction does not say.
- When every task of the instruction is done, reply with a line holding only: finish conversation"""


class AceDataError(BenchmarkDataError):
    """An ACEBench file not in the published format."""


class NotImplementedInAdapter(NotImplementedError):
    """What the entry needs and this adapter does not implement (named in the message)."""


# -- the classes --------------------------------------------------------------------------------


class _Api:
    NAME = ""
    SAVED: tuple[str, ...] = ()

    def __init__(self, config: dict[str, Any], world: dict[str, _Api]) -> None:
        self.world = world
        for attr in self.SAVED:
            if attr not in config:
                raise NotImplementedInAdapter(f"ACEBench class {self.NAME}: initial_config gives no {attr!r}; the "
                                              "benchmark's built-in default data is not reproduced by this adapter")
            setattr(self, attr, copy.deepcopy(config[attr]))

    def state(self) -> dict[str, Any]:
        return {attr: copy.deepcopy(getattr(self, attr)) for attr in self.SAVED}

    def _device_ready(self, need_wifi: bool) -> None:
        base = self.world.get("baseapi")
        if base is None:
            return
        if not base.logged_in:  # type: ignore[attr-defined]
            raise ValueError("the device is not logged in")
        if need_wifi and not base.wifi:  # type: ignore[attr-defined]
            raise ValueError("wifi is off")


class BaseApi(_Api):
    NAME = "BaseApi"
    SAVED = ("wifi", "logged_in")

    def turn_on_wifi(self) -> dict[str, Any]:
        self.wifi = True
        return {"status": True, "message": "wifi is on"}

    def login_device(self) -> dict[str, Any]:
        self.logged_in = True
        return {"status": True, "message": "device logged in"}


def _next_id(table: dict[str, Any]) -> int:
    numbers = [int(k) for k in table if str(k).isdigit()]
    return max(numbers, default=0) + 1


class MessageApi(_Api):
    NAME = "MessageApi"
    SAVED = ("inbox",)

    def __init__(self, config: dict[str, Any], world: dict[str, _Api]) -> None:
        super().__init__(config, world)
        self.user_list = dict(config.get("user_list") or {})

    def _user_id(self, name: str) -> str:
        if name not in self.user_list:
            raise ValueError(f"user {name} does not exist")
        entry = self.user_list[name]
        return str(entry.get("user_id") if isinstance(entry, dict) else entry)

    def send_message(self, sender_name: str, receiver_name: str, message: str) -> dict[str, Any]:
        self._device_ready(need_wifi=True)
        mid = _next_id(self.inbox)
        self.inbox[str(mid)] = {"sender_id": self._user_id(sender_name), "receiver_id": self._user_id(receiver_name),
                                "message": message}
        return {"status": True, "message": f"message sent to {receiver_name}", "message_id": mid}

    def delete_message(self, message_id: int) -> dict[str, Any]:
        self._device_ready(need_wifi=True)
        if str(message_id) not in self.inbox:
            raise ValueError(f"message {message_id} does not exist")
        del self.inbox[str(message_id)]
        return {"status": True, "message": f"message {message_id} deleted"}

    def get_latest_message_id(self) -> dict[str, Any]:
        self._device_ready(need_wifi=True)
        if not self.inbox:
            raise ValueError("the inbox is empty")
        return {"message_id": max(int(k) for k in self.inbox)}

    def get_earliest_message_id(self) -> dict[str, Any]:
        self._device_ready(need_wifi=True)
        if not self.inbox:
            raise ValueError("the inbox is empty")
        return {"message_id": min(int(k) for k in self.inbox)}

    def view_messages_between_users(self, sender_name: str, receiver_name: str) -> dict[str, Any]:
        self._device_ready(need_wifi=True)
        s, r = self._user_id(sender_name), self._user_id(receiver_name)
        return {"messages": [{"message_id": int(k), "message": m["message"]} for k, m in self.inbox.items()
                             if m.get("sender_id") == s and m.get("receiver_id") == r]}

    def search_messages(self, user_name: str, keyword: str) -> dict[str, Any]:
        self._device_ready(need_wifi=True)
        uid = self._user_id(user_name)
        return {"messages": [{"message_id": int(k), "message": m["message"]} for k, m in self.inbox.items()
                             if uid in (m.get("sender_id"), m.get("receiver_id"))
                             and keyword.lower() in str(m.get("message", "")).lower()]}


class ReminderApi(_Api):
    NAME = "ReminderApi"
    SAVED = ("reminder_list",)

    def add_reminder(self, title: str, description: str, time: str) -> dict[str, Any]:
        self._device_ready(need_wifi=False)
        rid = _next_id(self.reminder_list)
        self.reminder_list[str(rid)] = {"reminder_id": rid, "title": title, "description": description, "time": time,
                                        "notified": False}
        return {"status": True, "message": f"reminder {title!r} added", "reminder_id": rid}

    def view_reminder_by_title(self, title: str) -> dict[str, Any]:
        self._device_ready(need_wifi=False)
        for r in self.reminder_list.values():
            if r.get("title") == title:
                return {"reminder": r}
        raise ValueError(f"no reminder titled {title!r}")

    def search_reminders(self, keyword: str) -> dict[str, Any]:
        self._device_ready(need_wifi=False)
        k = keyword.lower()
        return {"reminders": [r for r in self.reminder_list.values()
                              if k in str(r.get("title", "")).lower() or k in str(r.get("description", "")).lower()]}


#: The classes this adapter implements, by lower-cased name (the benchmark's files spell
#: ``ReminderApi`` and ``ReminderAPI`` both).
CLASSES: dict[str, type[_Api]] = {c.NAME.lower(): c for c in (BaseApi, MessageApi, ReminderApi)}


# -- entries --------------------------------------------------------------------------------------


class AceEntry:
    def __init__(self, category: str, raw: dict[str, Any], answer: dict[str, Any]) -> None:
        self.category = category
        self.id = raw["id"]
        self.question = raw["question"]
        self.initial_config = raw["initial_config"]
        self.functions = raw["function"]
        self.involved = list(raw["involved_classes"])
        truth = answer["ground_truth"]
        self.ground_truth = truth if isinstance(truth, list) else [truth]
        stones = answer["mile_stone"]
        self.milestones: list[list[str]] = stones if stones and isinstance(stones[0], list) else [stones]


def _need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise AceDataError(f"{where}: {what}")


def _check_entry(raw: Any, where: str) -> None:
    _need(isinstance(raw, dict), where, "must be an object")
    _need(isinstance(raw.get("id"), str), f"{where}: field id", "must be a string")
    where = f"{where} (id {raw['id']!r}): field"
    _need(isinstance(raw.get("question"), str), f"{where} question", "must be a string")
    _need(isinstance(raw.get("initial_config"), dict), f"{where} initial_config", "must be an object")
    fns = raw.get("function")
    _need(isinstance(fns, list) and all(isinstance(f, dict) and isinstance(f.get("name"), str) for f in fns),
          f"{where} function", "must be a list of objects with a name")
    inv = raw.get("involved_classes")
    _need(isinstance(inv, list) and inv and all(isinstance(c, str) for c in inv), f"{where} involved_classes",
          "must be a non-empty list of class names")


def _check_answer(raw: Any, where: str) -> None:
    _need(isinstance(raw, dict), where, "must be an object")
    _need(isinstance(raw.get("id"), str), f"{where}: field id", "must be a string")
    where = f"{where} (id {raw['id']!r}): field"
    truth = raw.get("ground_truth")
    items = truth if isinstance(truth, list) else [truth]
    _need(all(isinstance(t, dict) and len(t) == 1 and isinstance(next(iter(t.values())), dict) for t in items),
          f"{where} ground_truth", "must be a list of {class: {attribute: value}} objects")
    stones = raw.get("mile_stone")
    ok = isinstance(stones, list) and (all(isinstance(s, str) for s in stones) or (
        bool(stones) and all(isinstance(s, list) and all(isinstance(x, str) for x in s) for s in stones)))
    _need(ok, f"{where} mile_stone", "must be a list of call strings, or a list of such lists")


def load_category(folder: Path, category: str) -> list[AceEntry]:
    """The entries of ``data_<category>.json`` with their ``possible_answer``."""
    path = folder / f"data_{category}.json"
    answers_path = folder / "possible_answer" / f"data_{category}.json"
    rows = read_json_lines(path, AceDataError)
    answers = read_json_lines(answers_path, AceDataError)
    for i, raw in enumerate(rows):
        _check_entry(raw, f"{path}: entry {i + 1}")
    by_id: dict[str, dict[str, Any]] = {}
    for i, raw in enumerate(answers):
        _check_answer(raw, f"{answers_path}: entry {i + 1}")
        by_id[raw["id"]] = raw
    missing = [r["id"] for r in rows if r["id"] not in by_id]
    _need(not missing, str(answers_path), f"no answer for {', '.join(missing)}")
    return [AceEntry(category, r, by_id[r["id"]]) for r in rows]


# -- the benchmark's call text and its scoring ----------------------------------------------------


def render_value(value: Any) -> str:
    """A value as the benchmark's milestones write it: Python literals, strings in single
    quotes as they are (``'Domino's'``)."""
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, list):
        return "[" + ", ".join(render_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"'{k}': {render_value(v)}" for k, v in value.items()) + "}"
    return repr(value)


def render_calls(calls: Sequence[Any]) -> str:
    """One agent message's calls as the benchmark writes them: ``[f(a='x'), g()]``."""
    return "[" + ", ".join(f"{c.name}(" + ", ".join(f"{k}={render_value(v)}" for k, v in c.arguments.items()) + ")"
                           for c in calls) + "]"


def milestone_accuracy(milestones: Sequence[str], process: Sequence[str]) -> float:
    """The share of ``milestones`` found in order in ``process`` (stripped text equality)."""
    if not milestones:
        return 1.0
    found, at = 0, 0
    for stone in milestones:
        while at < len(process):
            at += 1
            if process[at - 1].strip() == stone.strip():
                found += 1
                break
    return found / len(milestones)


def process_accuracy(alternatives: Sequence[Sequence[str]], process: Sequence[str]) -> float:
    """The best milestone accuracy over the alternatives, rounded to 3 places as the benchmark does."""
    return max(round(milestone_accuracy(m, process), 3) for m in alternatives)


def end_state_errors(truth: Sequence[dict[str, Any]], result: Sequence[dict[str, Any]]) -> list[str]:
    """Why ``result`` (per involved class, its saved attributes) is not the ground truth's end
    state (the benchmark's ``agent_checker``, class names compared case-insensitively); none
    when it is."""
    if len(truth) != len(result):
        return [f"wrong number of classes: expected {len(truth)}, got {len(result)}"]
    ours = {next(iter(r)).lower(): next(iter(r.values())) for r in result}
    errors = []
    for expected in truth:
        name, attrs = next(iter(expected.items()))
        model = ours.get(name.lower())
        if model is None:
            errors.append(f"class {name} missing from the end state")
            continue
        for attr, value in model.items():
            if attr not in attrs:
                errors.append(f"class({name}) attribute({attr}) missing in the answer")
            elif isinstance(attrs[attr], dict):
                if not isinstance(value, dict):
                    errors.append(f"class({name}) attribute({attr}) wrong: expected {attrs[attr]}, real {value}")
                    continue
                for key, want in attrs[attr].items():
                    if key not in value or value[key] != want:
                        errors.append(f"class({name}) attribute({attr}.{key}) wrong: expected {want}, "
                                      f"real {value.get(key, '<missing>')}")
            elif attrs[attr] != value:
                errors.append(f"class({name}) attribute({attr}) wrong: expected {attrs[attr]}, real {value}")
    return errors


def check_supported(entry: AceEntry) -> None:
    missing = [c for c in entry.involved if c.lower() not in CLASSES]
    if missing:
        raise NotImplementedInAdapter(f"ACEBench {entry.id}: class {', '.join(missing)} is not implemented by this "
                                      f"adapter (implemented: {', '.join(c.NAME for c in CLASSES.values())})")


# -- the environment ------------------------------------------------------------------------------


class AceAgentEnv:
    """One ACEBench agent entry as a reference-format environment (see the module docstring)."""

    def __init__(self, entry: AceEntry, user_backend: Any = None) -> None:
        check_supported(entry)
        if entry.category == "agent_multi_turn" and user_backend is None:
            raise NotImplementedInAdapter(f"ACEBench {entry.id}: a multi-turn entry needs the simulated user "
                                          "(-o user=openai:BASE_URL#MODEL)")
        self.entry = entry
        self.user_backend = user_backend
        self.world: dict[str, _Api] = {}
        self.process: list[str] = []
        self.steps = 0
        self.user: SimulatedUser | None = None
        self.done = False

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        config = {k.lower(): v for k, v in self.entry.initial_config.items()}
        self.world = {}
        for name in self.entry.involved:
            self.world[name.lower()] = CLASSES[name.lower()](dict(config.get(name.lower()) or {}), self.world)
        self.process, self.steps, self.done = [], 0, False
        intro = (
            "You are an assistant operating the user's apps through functions.\n"
            f"Functions (JSON schemas): {json.dumps(self.entry.functions, ensure_ascii=False)}\n"
            'Call functions with <tool_call>{"name": "<function>", "arguments": {...}}</tool_call>; several per '
            "message run in order and their results come back to you. "
        )
        if self.entry.category == "agent_multi_step":
            return intro + "When the task is done, reply without a function call.\n\nUser: " + self.entry.question, {}
        self.user = SimulatedUser(self.user_backend, USER_PROMPT.format(instruction=self.entry.question))
        first = self.user.reply(USER_OPENING)
        return intro + "A message without a function call is said to the user.\n\nUser: " + first, {}

    def _execute(self, name: str, arguments: dict[str, Any]) -> str:
        for api in self.world.values():
            method = getattr(api, name, None)
            if method is not None and not name.startswith("_") and callable(method) and name not in ("state",):
                try:
                    return json.dumps(method(**arguments), ensure_ascii=False)
                except (TypeError, ValueError, KeyError, AttributeError) as exc:
                    return json.dumps({"status": False, "message": str(exc)}, ensure_ascii=False)
        return json.dumps({"status": False, "message": f"no involved class has a function {name}"})

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.done:
            return "The episode is over.", self.score()[0], True, False, {}
        text = action if isinstance(action, str) else str(action)
        self.steps += 1
        try:
            calls = parse_tool_action(text).calls
        except ActionFormatError as exc:
            return self._maybe_end(f"Could not parse your function call ({exc}).")
        if calls:
            self.process.append(render_calls(calls))
            results = [f"<tool_response>{json.dumps({'name': c.name, 'content': self._execute(c.name, dict(c.arguments))}, ensure_ascii=False)}</tool_response>"
                       for c in calls]
            return self._maybe_end("\n".join(results))
        if self.user is None:  # multi-step: a message without calls ends the task
            return self._end()
        reply = self.user.reply(text)
        if FINISH in reply.lower():
            return self._end()
        return self._maybe_end(f"User: {reply}")

    def _maybe_end(self, obs: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.steps >= MAX_STEPS[self.entry.category]:
            return self._end()
        return obs, 0.0, False, False, {}

    def _end(self) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.done = True
        reward, info = self.score()
        return "The episode is over.", reward, True, False, info

    def end_state(self) -> list[dict[str, Any]]:
        return [{name: self.world[name.lower()].state()} for name in self.entry.involved]

    def score(self) -> tuple[float, dict[str, Any]]:
        """The return (1 for the right end state, else the process accuracy, at most
        :data:`NEAR_MISS`) and both accuracies."""
        errors = end_state_errors(self.entry.ground_truth, self.end_state())
        process = 1.0 if not errors else process_accuracy(self.entry.milestones, self.process)
        reward = 1.0 if not errors else min(process, NEAR_MISS)
        return reward, {"end_state_valid": not errors, "end_state_errors": errors, "process_accuracy": process,
                        "process": list(self.process)}

    def close(self) -> None:
        self.world = {}


# -- the suite ------------------------------------------------------------------------------------


def _names(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v for v in value.replace(",", " ").split() if v]
    return [str(v) for v in value]


def _category(name: str) -> str:
    full = name if name.startswith(("agent_", "normal_", "special_")) else f"agent_{name}"
    if full.startswith(("normal", "special")) or name in ("normal", "special"):
        raise AceDataError(f"ACEBench category {name} is not implemented by this suite (it runs the agent category: "
                           f"{', '.join(CATEGORIES)}; the normal and special categories are single-reply call checks)")
    if full not in CATEGORIES:
        raise AceDataError(f"unknown ACEBench agent category {name} (known: {', '.join(CATEGORIES)})")
    return full


def acebench_items(context: SuiteContext, *, size: int = 1, seed: int = 0, data: str | Path | None = None,
                   categories: Any = None, ids: Any = None, user: Any = None) -> Sequence[EvalItem]:
    """``size`` episodes of each entry of each chosen category (default both)."""
    if data is None:
        raise AceDataError("suite acebench_agent reads ACEBench's data: give -o data=FOLDER (laid out as its "
                           "data_all/data_en: data_agent_*.json and possible_answer/)")
    folder = Path(data)
    if folder.is_file():
        folder = folder.parent
    if not folder.is_dir():
        raise AceDataError(f"{data}: no such folder")
    chosen = [_category(c) for c in _names(categories)] or [
        c for c in CATEGORIES if (folder / f"data_{c}.json").is_file()]
    if not chosen:
        raise AceDataError(f"{folder}: holds no data_agent_multi_step.json or data_agent_multi_turn.json")
    backend = None
    if "agent_multi_turn" in chosen:
        backend = resolve_user_backend(user, getattr(context, "plugins", None), suite="acebench_agent")
    wanted = set(_names(ids))
    items = []
    for category in chosen:
        for entry in load_category(folder, category):
            if wanted and entry.id not in wanted:
                continue
            for k in range(size):
                items.append(EvalItem(group=category, seed=seed + k, label=entry.id, column=COLUMNS[category],
                                      max_turns=MAX_STEPS[category] + 1,
                                      make_env=lambda entry=entry: AceAgentEnv(entry, backend)))
    if wanted:
        missing = sorted(wanted - {i.label for i in items})
        if missing:
            raise AceDataError(f"{folder}: no entry {', '.join(missing)}")
    return items


SUITE = EpisodeSuite(
    name="acebench_agent",
    description="ACEBench agent category (adapter on the published format; no package exists): multi-step and "
                "multi-turn entries on in-memory BaseApi/MessageApi/ReminderApi (other classes named as "
                "unavailable), multi-turn with a simulated user (-o user=openai:URL#MODEL); success = end-state "
                "accuracy, mean return = process accuracy.",
    items=acebench_items,
    trusted=True,
    options={"data": "a folder laid out as ACEBench's data_all/data_en (data_agent_*.json, possible_answer/)",
             "categories": "multi_step, multi_turn (default: both found)",
             "ids": "comma-separated entry ids instead of every entry",
             "user": "the simulated user's model for multi_turn: openai:BASE_URL#MODEL"},
    defaults={"size": 1, "temperature": 0.0, "max_new_tokens": 1024},
)
