r"""ACEBench's agent category as an episode suite of ``spade eval`` (``--suite acebench_agent``).

ACEBench has no installable package, so this is an adapter written against the
benchmark's published data format and scoring rules, not its code:

* **Data** (``-o data=FOLDER``): a folder laid out as the benchmark's ``data_all/data_en``:
  ``data_agent_multi_step.json`` and ``data_agent_multi_turn.json`` (JSON lines: ``id``,
  ``question``, ``initial_config`` (per class, attributes to load), ``function`` (the
  functions shown to the agent, JSON schemas), ``involved_classes``) and
  ``possible_answer/`` with the same names (``id``, ``ground_truth``: per class the expected
  end state, ``mile_stone``: the expected calls in order, or several such lists).
* **An episode**: ``agent_multi_step``: the question is the user's one message; each agent
  message's ``<tool_call>`` tags run in order on this episode's instances of the involved
  classes, a message without calls ends the episode. ``agent_multi_turn``: the question is
  the simulated user's instruction (``-o user=openai:URL#MODEL``; the benchmark's airline
  rules for an entry involving ``Travel``, its phone rules otherwise), the agent is told its
  domain's rules in short (:data:`PHONE_NOTE`, :data:`AIRLINE_NOTE`); a message without
  calls goes to the user, whose reply holding ``finish conversation`` ends the episode.
* **Calls** run as the benchmark runs them: a function runs on every involved class that
  has it (the phone classes all have ``turn_on_wifi``/``login_device``), the last answer
  returned, a dictionary as JSON, text as it is, anything else as Python prints it. An
  unknown function, arguments the function does not take, or a failure inside (the
  benchmark's own code fails where ours does: a booking with a wrong password, say) is an
  answer ``Error during execution: <reason>`` (the benchmark's reason for an unknown
  function is a Python scoping error; its multi-turn execution prints the placeholder
  ``{str(e)}`` instead of the reason). Multi-step runs the message's other calls on;
  multi-turn stops at the error, answers with it alone, and records no end state from that
  message.
* **Score** (the benchmark's ``agent_eval``): *end-state accuracy*: the involved classes'
  saved attributes must match the ground truth (same number of classes, none until a calling
  message has run (and, in multi-turn, run without an error); each answer class compared with
  ours of exactly its name, so the files' ``ReminderAPI``/``Reminderpi`` are not compared,
  as there; each attribute of ours present in the answer; a dictionary attribute must hold
  each of the answer's keys with its value, anything else be equal, on the attributes as
  JSON holds them); *process accuracy*: 1 for an entry with the right end state, else the
  share of milestones found in order among the agent's calls (each calling message written
  as the benchmark writes calls, ``[name(key='value', ...)]``, and compared as stripped
  text), the best over alternative milestone lists. The success rate (and the column
  ``ACE-multi-step``/``ACE-multi-turn``) is end-state accuracy; the mean return is process
  accuracy, except that an entry with a wrong end state whose milestones were all reached
  returns 0.999, so that it is not counted a success.

**Implemented**: every class the English agent entries involve (:data:`CLASSES`): the phone
classes in :mod:`spade_eval.acebench_apis`, the airline's in :mod:`spade_eval.acebench_travel`;
the entries' reading and the benchmark's scoring in :mod:`spade_eval.acebench_entries`.

**Checked against the published English agent data** (zeppombal/ACEBench, ``data_all/data_en``;
each entry's first milestone list played as the agent's messages through the evaluation
harness, multi-turn with a scripted user): 12 of 20 multi-step and 29 of 30 multi-turn entries
reach the published end state; every other one is a data bug, and with the calls corrected all
50 do. ``multi_step_0``/``1``: the milestone orders ``'Super Supreme'``, not on the menu (the
answer has ``Super Supreme Pizza``). ``multi_step_12``/``13``: the milestones never log in to
the food platform. ``multi_step_14`` to ``17``: the milestones delete the earliest message and
send "... 198.0 yuan." where the answer (and the question) delete the latest and the answer's
text has no final period, so an agent that copies the to-do list's text exactly fails.
``multi_step_16`` and ``multi_turn_6``: ``logged_in`` is false and the milestones never log in.
Milestones written with double quotes (``multi_turn_4`` to ``7``) never equal a call as
written here, which only lowers process accuracy for a wrong end state.

An entry's ``initial_config`` is read as the benchmark reads it: the ``BaseApi`` object sets
the device's ``wifi`` (default off) and ``logged_in`` (default on) for every phone class, and
``FoodPlatform``'s ``logged_in_users``; anything else in it is ignored (the classes' data is
always the built-in data). **Not implemented**, reported by name: any other class (an entry
involving one fails at once and is listed as unavailable) and ACEBench's ``normal_*`` and
``special_*`` categories (asking for one is an error naming it).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spade_core.actions import parse_tool_action
from spade_core.errors import ActionFormatError
from spade_core.evaluation import EpisodeSuite, EvalItem, SuiteContext

from .acebench_apis import AceApi, BaseApi, Episode, FoodPlatform, MessageApi, ReminderApi
from .acebench_entries import (
    AceDataError,
    AceEntry,
    NotImplementedInAdapter,
    end_state_errors,
    load_category,
    process_accuracy,
    render_calls,
)
from .acebench_travel import Travel
from .dialogue import SimulatedUser, resolve_user_backend

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

USER_PROMPT_TRAVEL = """You are a user talking to an airline's booking assistant.

Instruction: {instruction}

Rules:
- Write one line at a time: the user's next message only.
- Give only what the current step needs; say in your own words what the instruction says.
- Never invent anything the instruction does not say: what you do not know, say you do not have.
- Confirm what the assistant proposes only if the instruction agrees with it.
- If the instruction asks for a round trip, say at the start that you want to book a round trip.
- When the goal of the instruction is reached, reply with a line holding only: finish conversation"""

#: What the benchmark's multi-turn agent is told of its domain (its policy prompts), in short.
PHONE_NOTE = """You are a phone assistant: you send messages, manage reminders and order takeout. It is 2024-06-11 16:00 (Beijing time).
- Rely only on what the user and the functions tell you; if something is missing or a call fails, ask the user.
- Before sending a message, know its sender and receiver; if the inbox is full, ask the user which message to delete.
- Log in to the device (login_device) before viewing messages, and know whose messages to view.
- A reminder needs a title and content; its time is the current time unless the user gives one.
- Before ordering takeout, get the user's platform account and password and log in (login_food_platform); order from one merchant at a time; if the balance is short, say "Insufficient balance" and ask whether to change the order."""
AIRLINE_NOTE = """You are an airline agent: you book, change and cancel flight reservations. It is 2024-07-15 08:00 (Beijing time).
- Rely only on what the user and the functions tell you. Before a booking or a change, get the user's ID and password, list what you will do and get the user's explicit yes.
- Payment is by cash or bank; ask which. Free checked bags: regular members 1 in economy, 2 in business; silver 2 and 3; gold 3 and 3; each further bag costs 50 yuan.
- A booking with no direct flight can use a connecting flight through a transfer city, booked as two flights; a round trip is two bookings.
- A flight change keeps the origin and destination; a cabin change costs or refunds the difference; bags can be added, never removed.
- A cancellation needs the user ID, the reservation ID and the reason."""


# -- the classes --------------------------------------------------------------------------------

#: The classes this adapter implements (all the English agent entries involve), by
#: lower-cased name for the lookup; the end state is reported under the entry's spelling.
CLASSES: dict[str, type[AceApi]] = {c.NAME.lower(): c for c in (BaseApi, MessageApi, ReminderApi, FoodPlatform, Travel)}


def render_result(value: Any) -> str:
    """A function's answer as the benchmark passes it on: a dictionary as JSON, text as it
    is, anything else as Python prints it."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        try:
            return json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def check_supported(entry: AceEntry) -> None:
    missing = [c for c in entry.involved if c.lower() not in CLASSES]
    if missing:
        raise NotImplementedInAdapter(f"ACEBench {entry.id}: class {', '.join(missing)} is not implemented by this "
                                      f"adapter (implemented: {', '.join(c.NAME for c in CLASSES.values())})")


# -- the environment ------------------------------------------------------------------------------


def _tool_response(name: str, content: str) -> str:
    return f"<tool_response>{json.dumps({'name': name, 'content': content}, ensure_ascii=False)}</tool_response>"


class AceAgentEnv:
    """One ACEBench agent entry as a reference-format environment (see the module docstring)."""

    def __init__(self, entry: AceEntry, user_backend: Any = None) -> None:
        check_supported(entry)
        if entry.category == "agent_multi_turn" and user_backend is None:
            raise NotImplementedInAdapter(f"ACEBench {entry.id}: a multi-turn entry needs the simulated user "
                                          "(-o user=openai:BASE_URL#MODEL)")
        self.entry = entry
        self.user_backend = user_backend
        self.world: dict[str, AceApi] = {}
        self.process: list[str] = []
        self.recorded = False
        self.steps = 0
        self.user: SimulatedUser | None = None
        self.done = False

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        episode = Episode(self.entry.category, self.entry.initial_config)
        self.world = {name: CLASSES[name.lower()](episode) for name in self.entry.involved}
        self.process, self.recorded, self.steps, self.done = [], False, 0, False
        intro = (
            "You are an assistant operating the user's apps through functions.\n"
            f"Functions (JSON schemas): {json.dumps(self.entry.functions, ensure_ascii=False)}\n"
            'Call functions with <tool_call>{"name": "<function>", "arguments": {...}}</tool_call>; several per '
            "message run in order and their results come back to you. "
        )
        if self.entry.category == "agent_multi_step":
            return intro + "When the task is done, reply without a function call.\n\nUser: " + self.entry.question, {}
        notes = [note for cls, note in (("BaseApi", PHONE_NOTE), ("Travel", AIRLINE_NOTE)) if cls in self.entry.involved]
        prompt = USER_PROMPT if "BaseApi" in self.entry.involved or "Travel" not in self.entry.involved \
            else USER_PROMPT_TRAVEL
        self.user = SimulatedUser(self.user_backend, prompt.format(instruction=self.entry.question))
        first = self.user.reply(USER_OPENING)
        return (intro + "A message without a function call is said to the user.\n"
                + "".join(note + "\n" for note in notes) + "\nUser: " + first), {}

    def _execute(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        """Runs ``name`` on every involved class that offers it, in order, as the benchmark
        does (the last answer is returned); an unknown function, bad arguments or a failure
        inside are an execution error, as the benchmark reports them."""
        targets = [api for api in self.world.values() if api._offers(name)]
        if not targets:
            return False, (f"Error during execution: {name} is not a function of the involved classes "
                           f"({', '.join(self.world)})")
        try:
            for api in targets:
                result = getattr(api, name)(**arguments)
        except Exception as exc:  # whatever the call raises is reported to the agent, as there
            return False, f"Error during execution: {exc}"
        return True, render_result(result)

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
            responses = []
            for c in calls:
                ok, content = self._execute(c.name, dict(c.arguments))
                responses.append(_tool_response(c.name, content))
                if not ok and self.entry.category == "agent_multi_turn":
                    # the multi-turn execution stops at the first error, answers with it
                    # alone and keeps no end state from this message
                    return self._maybe_end(responses[-1])
            self.recorded = True
            return self._maybe_end("\n".join(responses))
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
        """The involved classes' saved attributes, under the entry's names; none until a calling
        message has run (the benchmark records the classes only from an execution; in
        multi-turn, from one without an error)."""
        if not self.recorded:
            return []
        return [{name: self.world[name]._saved()} for name in self.entry.involved]

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
                "multi-turn entries on in-memory BaseApi/MessageApi/ReminderApi/FoodPlatform/Travel with the "
                "benchmark's built-in data (other classes named as unavailable), multi-turn with a simulated user "
                "(-o user=openai:URL#MODEL); success = end-state accuracy, mean return = process accuracy.",
    items=acebench_items,
    trusted=True,
    options={"data": "a folder laid out as ACEBench's data_all/data_en (data_agent_*.json, possible_answer/)",
             "categories": "multi_step, multi_turn (default: both found)",
             "ids": "comma-separated entry ids instead of every entry",
             "user": "the simulated user's model for multi_turn: openai:BASE_URL#MODEL"},
    defaults={"size": 1, "temperature": 0.0, "max_new_tokens": 1024},
)
