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

**Implemented**: every class the English agent entries involve (:data:`CLASSES`), each with
every public function of the benchmark's class (``TOOLS``), its saved attributes (``SAVED``)
and its built-in starting data (``data/acebench_defaults.json``, typed in from the
benchmark's scenario files; its ``source`` names them):

* ``BaseApi`` (``wifi``, ``logged_in``): ``turn_on_wifi``, ``login_device``.
* ``MessageApi`` (``inbox``; six users, six messages, capacity 6): ``send_message``,
  ``delete_message``, ``view_messages_between_users``, ``search_messages``,
  ``get_all_message_times_with_ids``, ``get_latest_message_id``, ``get_earliest_message_id``.
* ``ReminderApi`` (``reminder_list``; three reminders, capacity 6): ``view_reminder_by_title``,
  ``add_reminder``, ``delete_reminder``, ``view_all_reminders``, ``mark_as_notified`` and
  ``search_reminders`` (multi-step only: the published English multi-turn class lacks both;
  the English multi-step file is not published, these two follow the Chinese one, except
  that a match is returned where its ``search_reminders`` fails on a text time).
* ``FoodPlatform`` (``users``, ``logged_in_users``, ``orders``; six users with balances, six
  merchants with their menus): ``login_food_platform``, ``view_logged_in_users``,
  ``check_balance``, ``add_food_delivery_order``, ``get_products``, ``view_orders``,
  ``search_orders``.
* ``Travel`` (``users``, ``reservations``; three users, eleven flights, four reservations;
  "now" is 2024-07-14 06:00): ``get_flight_details``, ``get_user_details``,
  ``get_reservation_details``, ``authenticate_user``, ``get_baggage_allowance``,
  ``find_transfer_flights``, ``calculate_baggage_fee``, ``update_balance``,
  ``reserve_flight``, ``modify_flight``, ``cancel_reservation`` (refunds to cash, keeps the
  reservation), ``process_refund``, ``calculate_price_difference``.

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

import copy
import functools
import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from importlib import resources
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
#: The classes' built-in starting data (see the file's ``source``).
DEFAULTS_FILE = "data/acebench_defaults.json"

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


class AceDataError(BenchmarkDataError):
    """An ACEBench file not in the published format."""


class NotImplementedInAdapter(NotImplementedError):
    """What the entry needs and this adapter does not implement (named in the message)."""


# -- the classes --------------------------------------------------------------------------------

#: The Travel class's "now", against which a cancellation's time to departure is measured.
TRAVEL_NOW = datetime(2024, 7, 14, 6, 0, 0)
#: The cancellation reason that refunds the whole fare whatever the time to departure.
AIRLINE_CANCELED = "The airline has canceled the flight."
#: Free checked bags by membership level and cabin, and the fee of each further bag.
FREE_BAGS = {"regular": {"Economy Class": 1, "Business Class": 2},
             "silver": {"Economy Class": 2, "Business Class": 3},
             "gold": {"Economy Class": 3, "Business Class": 3}}
BAG_FEE = 50
FLIGHT_TIME = "%Y-%m-%d %H:%M:%S"


@functools.cache
def _default_data() -> dict[str, Any]:
    return json.loads(resources.files(__package__).joinpath(DEFAULTS_FILE).read_text(encoding="utf-8"))


def default_state(name: str) -> dict[str, Any]:
    """A fresh copy of class ``name``'s built-in starting data (``data/acebench_defaults.json``)."""
    return copy.deepcopy(_default_data()[name])


def _integer_keys(table: dict[Any, Any]) -> dict[Any, Any]:
    return {int(k) if isinstance(k, str) and k.isdigit() else k: v for k, v in table.items()}


class _Episode:
    """What an entry's classes share: its category and the device's state. The benchmark
    gives each phone class its own ``wifi``/``logged_in``, all loaded from the entry's
    ``BaseApi`` configuration and all switched together (a call runs on every involved class
    that has the function), so one shared copy behaves the same."""

    def __init__(self, category: str, initial_config: dict[str, Any]) -> None:
        self.category = category
        base = initial_config.get("BaseApi") or {}
        self.base_config = copy.deepcopy(base)
        device = default_state("BaseApi")
        self.device = {"wifi": base.get("wifi", device["wifi"]), "logged_in": base.get("logged_in", device["logged_in"])}


class _Api:
    NAME = ""
    #: The attributes the end-state comparison reads (the benchmark's saved attributes).
    SAVED: tuple[str, ...] = ()
    #: Every function the class offers the agent.
    TOOLS: tuple[str, ...] = ()
    #: Functions the class's published code of a category lacks (calling one is an error there).
    ABSENT: dict[str, tuple[str, ...]] = {}

    def __init__(self, episode: _Episode) -> None:
        self.episode = episode

    def _offers(self, name: str) -> bool:
        return name in self.TOOLS and name not in self.ABSENT.get(self.episode.category, ())

    def _saved(self) -> dict[str, Any]:
        """The saved attributes as the benchmark's result file holds them (JSON: integer keys
        become strings)."""
        return json.loads(json.dumps({attr: getattr(self, attr) for attr in self.SAVED}))


class BaseApi(_Api):
    NAME = "BaseApi"
    SAVED = ("wifi", "logged_in")
    TOOLS = ("turn_on_wifi", "login_device")

    @property
    def wifi(self) -> Any:
        return self.episode.device["wifi"]

    @wifi.setter
    def wifi(self, value: Any) -> None:
        self.episode.device["wifi"] = value

    @property
    def logged_in(self) -> Any:
        return self.episode.device["logged_in"]

    @logged_in.setter
    def logged_in(self, value: Any) -> None:
        self.episode.device["logged_in"] = value

    def turn_on_wifi(self) -> dict[str, Any]:
        self.wifi = True
        return {"status": True, "message": "Wi-Fi has been turned on"}

    def login_device(self) -> dict[str, Any]:
        self.logged_in = True
        return {"status": True, "message": "Device has been logged in"}


def _refused(message: str) -> dict[str, Any]:
    return {"status": False, "message": message}


class MessageApi(BaseApi):
    NAME = "MessageApi"
    SAVED = ("inbox",)
    TOOLS = (*BaseApi.TOOLS, "send_message", "delete_message", "view_messages_between_users", "search_messages",
             "get_all_message_times_with_ids", "get_latest_message_id", "get_earliest_message_id")

    def __init__(self, episode: _Episode) -> None:
        super().__init__(episode)
        data = default_state(self.NAME)
        self.max_capacity: int = data["max_capacity"]
        self.user_list: dict[str, dict[str, Any]] = data["user_list"]
        self.inbox: dict[Any, dict[str, Any]] = _integer_keys(data["inbox"])
        self.message_id_counter: int = data["message_id_counter"]

    def send_message(self, sender_name: str, receiver_name: str, message: str) -> dict[str, Any]:
        if not self.logged_in:
            return _refused("Device not logged in, unable to send message")
        if not self.wifi:
            return _refused("Wi-Fi is turned off, cannot send messages at this time")
        if len(self.inbox) >= self.max_capacity:
            return _refused("Inbox capacity is full. You need to ask the user which message to delete.")
        if sender_name not in self.user_list or receiver_name not in self.user_list:
            return _refused("Sender or receiver does not exist")
        self.message_id_counter += 1
        self.inbox[self.message_id_counter] = {"sender_id": self.user_list[sender_name]["user_id"],
                                               "receiver_id": self.user_list[receiver_name]["user_id"],
                                               "message": message}
        return {"status": True, "message": f"Message successfully sent to {receiver_name}."}

    def delete_message(self, message_id: int) -> dict[str, Any]:
        if not self.logged_in:
            return _refused("Device not logged in, unable to delete message")
        if message_id not in self.inbox:
            return _refused("Message ID does not exist")
        del self.inbox[message_id]
        return {"status": True, "message": f"Message ID {message_id} has been successfully deleted."}

    def view_messages_between_users(self, sender_name: str, receiver_name: str) -> dict[str, Any]:
        if not self.logged_in:
            return _refused("Device not logged in, unable to view message information")
        if sender_name not in self.user_list:
            return _refused("Sender does not exist")
        if receiver_name not in self.user_list:
            return _refused("Receiver does not exist")
        sender, receiver = self.user_list[sender_name]["user_id"], self.user_list[receiver_name]["user_id"]
        found = [{"id": mid, "sender": sender_name, "receiver": receiver_name, "message": m["message"]}
                 for mid, m in self.inbox.items() if m["sender_id"] == sender and m["receiver_id"] == receiver]
        if not found:
            return _refused("No related message records found")
        return {"status": True, "messages": found}

    def search_messages(self, user_name: str, keyword: str) -> dict[str, Any]:
        if user_name not in self.user_list:
            return _refused("User does not exist")
        uid, word = self.user_list[user_name]["user_id"], keyword.lower()
        found = [{"id": mid, "sender_id": m["sender_id"], "receiver_id": m["receiver_id"], "message": m["message"]}
                 for mid, m in self.inbox.items()
                 if uid in (m["sender_id"], m["receiver_id"]) and word in m["message"].lower()]
        if not found:
            return _refused("No messages found containing the keyword")
        return {"status": True, "messages": found}

    def get_all_message_times_with_ids(self) -> dict[Any, Any]:
        if not self.logged_in:
            return _refused("Device not logged in, unable to retrieve all message times and their corresponding "
                            "message IDs.")
        # a message sent here has no time: the benchmark's lookup fails on it (KeyError 'time')
        return {mid: m["time"] for mid, m in self.inbox.items()}

    def _message_by_time(self, latest: bool) -> Any:
        best_id, best_time = None, None
        for mid, m in self.inbox.items():
            when = datetime.strptime(m["time"], "%Y-%m-%d")
            if best_time is None or (when > best_time if latest else when < best_time):
                best_id, best_time = mid, when
        return best_id

    def get_latest_message_id(self) -> dict[str, Any]:
        if not self.logged_in:
            return _refused("Device not logged in, unable to retrieve the latest sent message ID.")
        if not self.inbox:
            return _refused("No message records found")
        mid = self._message_by_time(latest=True)
        return {"status": True, "message": f"The latest message ID is {mid}", "message_id": mid}

    def get_earliest_message_id(self) -> dict[str, Any]:
        if not self.logged_in:
            return _refused("Device not logged in, unable to retrieve the earliest sent message ID.")
        if not self.inbox:
            return _refused("No message records found")
        mid = self._message_by_time(latest=False)
        return {"status": True, "message": f"The earliest message ID is {mid}", "message_id": mid}


class ReminderApi(BaseApi):
    NAME = "ReminderApi"
    SAVED = ("reminder_list",)
    TOOLS = (*BaseApi.TOOLS, "view_reminder_by_title", "add_reminder", "delete_reminder", "view_all_reminders",
             "mark_as_notified", "search_reminders")
    #: The English multi-turn reminder class as published has neither (its multi-step one has both).
    ABSENT = {"agent_multi_turn": ("mark_as_notified", "search_reminders")}

    def __init__(self, episode: _Episode) -> None:
        super().__init__(episode)
        data = default_state(self.NAME)
        self.max_capacity: int = data["max_capacity"]
        self.reminder_list: dict[Any, dict[str, Any]] = _integer_keys(data["reminder_list"])
        self.reminder_id_counter: int = data["reminder_id_counter"]

    def view_reminder_by_title(self, title: str) -> dict[str, Any]:
        if not self.logged_in:
            return _refused("The device is not logged in, so you cannot view notifications")
        for reminder in self.reminder_list.values():
            if reminder["title"] == title:
                return {"status": True, "reminder": reminder}
        return _refused(f"No reminder found with the title '{title}'.")

    def add_reminder(self, title: str, description: str, time: str) -> dict[str, Any]:
        if not self.logged_in:
            return _refused("Device not logged in. Unable to add a new reminder.")
        if len(self.reminder_list) >= self.max_capacity:
            return _refused("Reminder capacity is full. Unable to add a new reminder.")
        self.reminder_id_counter += 1
        rid = self.reminder_id_counter
        self.reminder_list[rid] = {"reminder_id": rid, "title": title, "description": description, "time": time,
                                   "notified": False}
        return {"status": True, "message": f"Reminder '{title}' was successfully added."}

    def delete_reminder(self, reminder_id: int) -> dict[str, Any]:
        if not self.logged_in:
            return _refused("Device not logged in. Unable to delete the specified reminder.")
        if reminder_id not in self.reminder_list:
            return _refused("Reminder ID does not exist.")
        del self.reminder_list[reminder_id]
        return {"status": True, "message": f"Reminder ID {reminder_id} was successfully deleted."}

    def view_all_reminders(self) -> dict[str, Any]:
        if not self.reminder_list:
            return _refused("No reminders found.")
        return {"status": True, "reminders": [{k: r[k] for k in ("title", "description", "time", "notified")}
                                              for r in self.reminder_list.values()]}

    def mark_as_notified(self, reminder_id: int) -> dict[str, Any]:
        if reminder_id not in self.reminder_list:
            return _refused("Reminder ID does not exist.")
        self.reminder_list[reminder_id]["notified"] = True
        return {"status": True, "message": f"Reminder ID {reminder_id} has been marked as notified."}

    def search_reminders(self, keyword: str) -> dict[str, Any]:
        word = keyword.lower()
        found = [{k: r[k] for k in ("title", "description", "time")} for r in self.reminder_list.values()
                 if word in r["title"].lower() or word in r["description"].lower()]
        if not found:
            return _refused("No reminders found containing the keyword.")
        return {"status": True, "reminders": found}


class FoodPlatform(BaseApi):
    NAME = "FoodPlatform"
    SAVED = ("users", "logged_in_users", "orders")
    TOOLS = (*BaseApi.TOOLS, "login_food_platform", "view_logged_in_users", "check_balance",
             "add_food_delivery_order", "get_products", "view_orders", "search_orders")

    def __init__(self, episode: _Episode) -> None:
        super().__init__(episode)
        data = default_state(self.NAME)
        self.users: dict[str, dict[str, Any]] = data["users"]
        self.merchant_list: dict[str, dict[str, Any]] = data["merchant_list"]
        # the benchmark loads the class's own configuration, then BaseApi's over it: the
        # logged-in users come from the BaseApi configuration (none by default)
        self.logged_in_users: list[Any] = list(episode.base_config.get("logged_in_users", data["logged_in_users"]))
        self.orders: list[dict[str, Any]] = data["orders"]

    def login_food_platform(self, username: str, password: str) -> dict[str, Any]:
        if not self.wifi:
            return _refused("Wi-Fi is not enabled, unable to login")
        if username not in self.users:
            return _refused("User does not exist")
        if self.users[username]["password"] != password:
            return _refused("Incorrect password")
        if username in self.logged_in_users:
            return _refused(f"{username} is already logged in")
        self.logged_in_users.append(username)
        return {"status": True, "message": f"User {username} has successfully logged in!"}

    def view_logged_in_users(self) -> dict[str, Any]:
        if not self.logged_in_users:
            return _refused("No users are currently logged in to the food platform")
        return {"status": True, "logged_in_users": self.logged_in_users}

    def check_balance(self, user_name: str) -> float:
        return self.users[user_name]["balance"] if user_name in self.users else 0.0

    def add_food_delivery_order(self, username: str, merchant_name: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        if username not in self.logged_in_users:
            return _refused(f"User {username} is not logged in to the food platform")
        if merchant_name not in self.merchant_list:
            return _refused("Merchant does not exist")
        menu = self.merchant_list[merchant_name]["menu"]
        total, lines = 0.0, []
        for item in items:
            product, quantity = item.get("product"), item.get("quantity", 1)
            if not isinstance(quantity, int) or quantity <= 0:
                return _refused(f"Invalid quantity {quantity} for product {product}")
            entry = next((p for p in menu if p["product"] == product), None)
            if entry is None:
                return _refused(f"Product {product} does not exist in {merchant_name}'s menu")
            total += entry["price"] * quantity
            lines.append({"product": product, "quantity": quantity, "price_per_unit": entry["price"]})
        if total > self.users[username]["balance"]:
            return _refused("Insufficient balance to place the order")
        self.users[username]["balance"] -= total
        self.orders.append({"user_name": username, "merchant_name": merchant_name, "items": lines,
                            "total_price": total})
        return {"status": True,
                "message": f"Food delivery order successfully placed with {merchant_name}. Total amount: {total} yuan"}

    def get_products(self, merchant_name: str) -> Any:
        merchant = self.merchant_list.get(merchant_name)
        if not merchant:
            return _refused(f"Merchant '{merchant_name}' does not exist")
        return merchant["menu"]

    def view_orders(self, user_name: str) -> dict[str, Any]:
        found = [o for o in self.orders if o["user_name"] == user_name]
        if not found:
            return _refused("User has no order records")
        return {"status": True, "orders": found}

    def search_orders(self, keyword: str) -> dict[str, Any]:
        word = keyword.lower()
        found = [o for o in self.orders if word in o["merchant_name"].lower()
                 or any(word in line["product"].lower() for line in o.get("items", []))]
        if not found:
            return _refused("No matching orders found")
        return {"status": True, "orders": found}


class Travel(_Api):
    """The airline class. Its answers are mostly plain text; where the benchmark's code fails
    (a booking with a wrong password or an unknown flight, an unknown cabin), the same lookup
    fails here, so the agent gets the same execution error."""

    NAME = "Travel"
    SAVED = ("users", "reservations")
    TOOLS = ("get_flight_details", "get_user_details", "get_reservation_details", "authenticate_user",
             "get_baggage_allowance", "find_transfer_flights", "calculate_baggage_fee", "update_balance",
             "reserve_flight", "modify_flight", "cancel_reservation", "process_refund", "calculate_price_difference")

    def __init__(self, episode: _Episode) -> None:
        super().__init__(episode)
        data = default_state(self.NAME)
        self.users: dict[str, dict[str, Any]] = data["users"]
        self.flights: list[dict[str, Any]] = data["flights"]
        self.reservations: list[dict[str, Any]] = data["reservations"]

    def _flight(self, flight_no: Any) -> dict[str, Any] | None:
        return next((f for f in self.flights if f["flight_no"] == flight_no), None)

    def get_flight_details(self, origin: str | None = None, destination: str | None = None) -> Any:
        found = [f for f in self.flights if (not origin or f["origin"] == origin)
                 and (not destination or f["destination"] == destination)]
        if not found:
            return "There are no direct flights that meet the criteria."
        return [dict(f) for f in found]

    def get_user_details(self, user_id: str, password: str) -> dict[str, Any]:
        user = self.users.get(user_id)
        if user and user["password"] == password:
            return {k: v for k, v in user.items() if k != "password"}
        return {"status": "error", "message": "Incorrect username or password."}

    def get_reservation_details(self, reservation_id: str | None = None, user_id: str | None = None) -> Any:
        if reservation_id:
            found = [r for r in self.reservations if r["reservation_id"] == reservation_id]
        elif user_id:
            found = [r for r in self.reservations if r["user_id"] == user_id]
        else:
            return {"status": "error", "message": "Please provide a valid reservation ID or user ID"}
        return [{**r, "flight_info": self._flight(r["flight_no"])} for r in found]

    def authenticate_user(self, user_id: str, password: str) -> dict[str, Any]:
        user = self.users.get(user_id)
        if user and user["password"] == password:
            return user
        return {"status": "error", "message": "Incorrect username or password."}

    def get_baggage_allowance(self, membership_level: str, cabin_class: str) -> int:
        return FREE_BAGS.get(membership_level, {}).get(cabin_class, 0)

    def find_transfer_flights(self, origin_city: str, transfer_city: str, destination_city: str) -> Any:
        firsts = [f for f in self.flights if f["origin"] == origin_city and f["destination"] == transfer_city
                  and f["status"] == "available"]
        seconds = [f for f in self.flights if f["origin"] == transfer_city and f["destination"] == destination_city
                   and f["status"] == "available"]
        pairs = [{"first_leg": a, "second_leg": b} for a in firsts for b in seconds
                 if datetime.strptime(a["arrival_time"], FLIGHT_TIME) < datetime.strptime(b["depart_time"], FLIGHT_TIME)]
        return pairs or "No connecting flights that meet the criteria were found."

    def calculate_baggage_fee(self, membership_level: str, cabin_class: str, baggage_count: int) -> int:
        # an unknown level or cabin is a lookup error, as in the benchmark
        return max(baggage_count - FREE_BAGS[membership_level][cabin_class], 0) * BAG_FEE

    def update_balance(self, user: dict[str, Any], payment_method: str, amount: float) -> bool:
        """Adds ``amount`` to the cash or bank balance of ``user`` unless that would go below
        zero; any other method changes nothing and counts as done (as in the benchmark)."""
        key = {"cash": "cash_balance", "bank": "bank_balance"}.get(payment_method)
        if key is None:
            return True
        if user[key] + amount < 0:
            return False
        user[key] += amount
        return True

    def reserve_flight(self, user_id: str, password: str, flight_no: str, cabin: str, payment_method: str,
                       baggage_count: int) -> str:
        # a wrong password gives the error answer, whose missing membership level then fails
        # the fee lookup; an unknown or unavailable flight fails the price lookup first
        user = self.authenticate_user(user_id, password)
        flight = next((f for f in self.flights if f["flight_no"] == flight_no and f["status"] == "available"), None)
        price = flight["economy_price"] if cabin == "Economy Class" else flight["business_price"]
        total = price + self.calculate_baggage_fee(user["membership_level"], cabin, baggage_count)
        if payment_method not in ("cash", "bank"):
            return "Invalid payment method"
        balance = f"{payment_method}_balance"
        if total > self.users[user_id][balance]:
            return f"Your {payment_method} balance is insufficient. Please consider using another payment method."
        self.users[user_id][balance] -= total
        flight["seats_available"] -= 1
        rid = f"res_{len(self.reservations) + 1}"
        self.reservations.append({"reservation_id": rid, "user_id": user_id, "flight_no": flight_no,
                                  "payment_method": payment_method, "cabin": cabin, "baggage": baggage_count})
        return f"Booking successful. Reservation ID: {rid}. Total cost: {total} yuan (including baggage fees)."

    def modify_flight(self, user_id: str, reservation_id: str, new_flight_no: str | None = None,
                      new_cabin: str | None = None, add_baggage: int = 0, new_payment_method: str | None = None) -> str:
        reservation = next((r for r in self.reservations
                            if r["reservation_id"] == reservation_id and r["user_id"] == user_id), None)
        if reservation is None:
            return "Reservation not found or user ID does not match."
        flight = self._flight(reservation["flight_no"])
        if flight is None:
            return "Flight information not found."
        method = new_payment_method or reservation["payment_method"]
        user = self.users[user_id]
        notes = []
        if new_flight_no and new_flight_no != reservation["flight_no"]:
            new = self._flight(new_flight_no)
            if new is None or new["origin"] != flight["origin"] or new["destination"] != flight["destination"]:
                return "Flight change failed: Invalid new flight number or destination does not match."
            reservation["flight_no"] = new_flight_no
            notes.append("Flight number has been changed.")
        if new_cabin and new_cabin != reservation.get("cabin"):
            # priced on the reservation's flight before any change above
            difference = self.calculate_price_difference(flight, reservation["cabin"], new_cabin)
            reservation["cabin"] = new_cabin
            if difference > 0:
                notes.append(f"Cabin change successful. Price difference paid: {difference}."
                             if self.update_balance(user, method, -difference)
                             else "Insufficient balance to pay the cabin price difference.")
            elif difference < 0:
                self.update_balance(user, method, -difference)
                notes.append(f"Cabin change successful. Price difference refunded: {-difference}.")
        if add_baggage > 0:
            bags = reservation.get("baggage", 0) + add_baggage
            cost = max(0, bags - self.get_baggage_allowance(user["membership_level"], reservation["cabin"])) * BAG_FEE
            if cost > 0:
                notes.append(f"Baggage has been added. Additional fee to be paid: {cost}."
                             if self.update_balance(user, method, -cost)
                             else "Insufficient balance to pay the additional baggage fees.")
            reservation["baggage"] = bags
        return " ".join(notes or ["Modification completed with no additional fees."])

    def cancel_reservation(self, user_id: str, reservation_id: str, reason: str) -> str:
        """Refunds to the cash balance; the reservation stays in the list (the benchmark removes
        nothing)."""
        user = self.users.get(user_id)
        if not user:
            return "Invalid user ID."
        reservation = next((r for r in self.reservations
                            if r["reservation_id"] == reservation_id and r["user_id"] == user_id), None)
        if reservation is None:
            return "Invalid reservation ID or it does not belong to the user."
        flight = self._flight(reservation["flight_no"])
        if flight is None:
            return "Invalid flight information."
        departure = datetime.strptime(flight["depart_time"], FLIGHT_TIME)
        if TRAVEL_NOW > departure:
            return "The flight segment has been used and cannot be canceled."
        price = flight["economy_price"] if reservation["cabin"] == "Economy Class" else flight["business_price"]
        if reason == AIRLINE_CANCELED:
            self.process_refund(user, price)
            return (f"The flight has been canceled. Your reservation will be canceled free of charge, and {price} "
                    "yuan has been refunded.")
        if departure - TRAVEL_NOW > timedelta(days=1):
            self.process_refund(user, price)
            return f"More than 24 hours before departure. Free cancellation successful, {price} yuan has been refunded."
        fee = price * 0.1
        self.process_refund(user, price - fee)
        return (f"Less than 24 hours before departure. A cancellation fee of {fee} yuan has been deducted, and "
                f"{price - fee} yuan has been refunded.")

    def process_refund(self, user: dict[str, Any], amount: float) -> None:
        user["cash_balance"] += amount

    def calculate_price_difference(self, flight: dict[str, Any], old_cabin: str, new_cabin: str) -> Any:
        prices = {"Economy Class": flight["economy_price"], "Business Class": flight["business_price"]}
        return prices.get(new_cabin, 0) - prices.get(old_cabin, 0)


#: The classes this adapter implements (all the English agent entries involve), by
#: lower-cased name for the lookup; the end state is reported under the entry's spelling.
CLASSES: dict[str, type[_Api]] = {c.NAME.lower(): c for c in (BaseApi, MessageApi, ReminderApi, FoodPlatform, Travel)}


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
    config = raw.get("initial_config")
    _need(isinstance(config, dict) and all(isinstance(v, dict) for v in config.values()), f"{where} initial_config",
          "must be an object of {class: {attribute: value}}")
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
    state (the benchmark's ``agent_eval`` with its ``agent_checker``); none when it is.

    As there, an answer class is compared with our class of exactly its name; an answer class
    named otherwise (the files' ``ReminderAPI``, ``Reminderpi``) matches none and is not
    compared, though it counts toward the number of classes."""
    if len(truth) != len(result):
        return [f"wrong number of classes: expected {len(truth)}, got {len(result)}"]
    ours = {next(iter(r)): next(iter(r.values())) for r in result}
    errors = []
    for expected in truth:
        name, attrs = next(iter(expected.items()))
        model = ours.get(name)
        if model is None:
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
        self.world: dict[str, _Api] = {}
        self.process: list[str] = []
        self.recorded = False
        self.steps = 0
        self.user: SimulatedUser | None = None
        self.done = False

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        episode = _Episode(self.entry.category, self.entry.initial_config)
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
