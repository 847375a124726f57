"""ACEBench's phone classes, in memory: the device (``BaseApi``), messages, reminders and the
food platform, each with every public function of the benchmark's class (``TOOLS``), its
saved attributes (``SAVED``) and its built-in starting data (``data/acebench_defaults.json``,
typed in from the benchmark's scenario files; its ``source`` names them):

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

The airline's class is :mod:`spade_eval.acebench_travel`'s; the suite is :mod:`spade_eval.acebench`.
"""

from __future__ import annotations

import copy
import functools
import json
from datetime import datetime
from importlib import resources
from typing import Any

#: The classes' built-in starting data (see the file's ``source``).
DEFAULTS_FILE = "data/acebench_defaults.json"


@functools.cache
def _default_data() -> dict[str, Any]:
    return json.loads(resources.files(__package__).joinpath(DEFAULTS_FILE).read_text(encoding="utf-8"))


def default_state(name: str) -> dict[str, Any]:
    """A fresh copy of class ``name``'s built-in starting data (``data/acebench_defaults.json``)."""
    return copy.deepcopy(_default_data()[name])


def integer_keys(table: dict[Any, Any]) -> dict[Any, Any]:
    return {int(k) if isinstance(k, str) and k.isdigit() else k: v for k, v in table.items()}


class Episode:
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


class AceApi:
    NAME = ""
    #: The attributes the end-state comparison reads (the benchmark's saved attributes).
    SAVED: tuple[str, ...] = ()
    #: Every function the class offers the agent.
    TOOLS: tuple[str, ...] = ()
    #: Functions the class's published code of a category lacks (calling one is an error there).
    ABSENT: dict[str, tuple[str, ...]] = {}

    def __init__(self, episode: Episode) -> None:
        self.episode = episode

    def _offers(self, name: str) -> bool:
        return name in self.TOOLS and name not in self.ABSENT.get(self.episode.category, ())

    def _saved(self) -> dict[str, Any]:
        """The saved attributes as the benchmark's result file holds them (JSON: integer keys
        become strings)."""
        return json.loads(json.dumps({attr: getattr(self, attr) for attr in self.SAVED}))


class BaseApi(AceApi):
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


def refused(message: str) -> dict[str, Any]:
    return {"status": False, "message": message}


class MessageApi(BaseApi):
    NAME = "MessageApi"
    SAVED = ("inbox",)
    TOOLS = (*BaseApi.TOOLS, "send_message", "delete_message", "view_messages_between_users", "search_messages",
             "get_all_message_times_with_ids", "get_latest_message_id", "get_earliest_message_id")

    def __init__(self, episode: Episode) -> None:
        super().__init__(episode)
        data = default_state(self.NAME)
        self.max_capacity: int = data["max_capacity"]
        self.user_list: dict[str, dict[str, Any]] = data["user_list"]
        self.inbox: dict[Any, dict[str, Any]] = integer_keys(data["inbox"])
        self.message_id_counter: int = data["message_id_counter"]

    def send_message(self, sender_name: str, receiver_name: str, message: str) -> dict[str, Any]:
        if not self.logged_in:
            return refused("Device not logged in, unable to send message")
        if not self.wifi:
            return refused("Wi-Fi is turned off, cannot send messages at this time")
        if len(self.inbox) >= self.max_capacity:
            return refused("Inbox capacity is full. You need to ask the user which message to delete.")
        if sender_name not in self.user_list or receiver_name not in self.user_list:
            return refused("Sender or receiver does not exist")
        self.message_id_counter += 1
        self.inbox[self.message_id_counter] = {"sender_id": self.user_list[sender_name]["user_id"],
                                               "receiver_id": self.user_list[receiver_name]["user_id"],
                                               "message": message}
        return {"status": True, "message": f"Message successfully sent to {receiver_name}."}

    def delete_message(self, message_id: int) -> dict[str, Any]:
        if not self.logged_in:
            return refused("Device not logged in, unable to delete message")
        if message_id not in self.inbox:
            return refused("Message ID does not exist")
        del self.inbox[message_id]
        return {"status": True, "message": f"Message ID {message_id} has been successfully deleted."}

    def view_messages_between_users(self, sender_name: str, receiver_name: str) -> dict[str, Any]:
        if not self.logged_in:
            return refused("Device not logged in, unable to view message information")
        if sender_name not in self.user_list:
            return refused("Sender does not exist")
        if receiver_name not in self.user_list:
            return refused("Receiver does not exist")
        sender, receiver = self.user_list[sender_name]["user_id"], self.user_list[receiver_name]["user_id"]
        found = [{"id": mid, "sender": sender_name, "receiver": receiver_name, "message": m["message"]}
                 for mid, m in self.inbox.items() if m["sender_id"] == sender and m["receiver_id"] == receiver]
        if not found:
            return refused("No related message records found")
        return {"status": True, "messages": found}

    def search_messages(self, user_name: str, keyword: str) -> dict[str, Any]:
        if user_name not in self.user_list:
            return refused("User does not exist")
        uid, word = self.user_list[user_name]["user_id"], keyword.lower()
        found = [{"id": mid, "sender_id": m["sender_id"], "receiver_id": m["receiver_id"], "message": m["message"]}
                 for mid, m in self.inbox.items()
                 if uid in (m["sender_id"], m["receiver_id"]) and word in m["message"].lower()]
        if not found:
            return refused("No messages found containing the keyword")
        return {"status": True, "messages": found}

    def get_all_message_times_with_ids(self) -> dict[Any, Any]:
        if not self.logged_in:
            return refused("Device not logged in, unable to retrieve all message times and their corresponding "
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
            return refused("Device not logged in, unable to retrieve the latest sent message ID.")
        if not self.inbox:
            return refused("No message records found")
        mid = self._message_by_time(latest=True)
        return {"status": True, "message": f"The latest message ID is {mid}", "message_id": mid}

    def get_earliest_message_id(self) -> dict[str, Any]:
        if not self.logged_in:
            return refused("Device not logged in, unable to retrieve the earliest sent message ID.")
        if not self.inbox:
            return refused("No message records found")
        mid = self._message_by_time(latest=False)
        return {"status": True, "message": f"The earliest message ID is {mid}", "message_id": mid}


class ReminderApi(BaseApi):
    NAME = "ReminderApi"
    SAVED = ("reminder_list",)
    TOOLS = (*BaseApi.TOOLS, "view_reminder_by_title", "add_reminder", "delete_reminder", "view_all_reminders",
             "mark_as_notified", "search_reminders")
    #: The English multi-turn reminder class as published has neither (its multi-step one has both).
    ABSENT = {"agent_multi_turn": ("mark_as_notified", "search_reminders")}

    def __init__(self, episode: Episode) -> None:
        super().__init__(episode)
        data = default_state(self.NAME)
        self.max_capacity: int = data["max_capacity"]
        self.reminder_list: dict[Any, dict[str, Any]] = integer_keys(data["reminder_list"])
        self.reminder_id_counter: int = data["reminder_id_counter"]

    def view_reminder_by_title(self, title: str) -> dict[str, Any]:
        if not self.logged_in:
            return refused("The device is not logged in, so you cannot view notifications")
        for reminder in self.reminder_list.values():
            if reminder["title"] == title:
                return {"status": True, "reminder": reminder}
        return refused(f"No reminder found with the title '{title}'.")

    def add_reminder(self, title: str, description: str, time: str) -> dict[str, Any]:
        if not self.logged_in:
            return refused("Device not logged in. Unable to add a new reminder.")
        if len(self.reminder_list) >= self.max_capacity:
            return refused("Reminder capacity is full. Unable to add a new reminder.")
        self.reminder_id_counter += 1
        rid = self.reminder_id_counter
        self.reminder_list[rid] = {"reminder_id": rid, "title": title, "description": description, "time": time,
                                   "notified": False}
        return {"status": True, "message": f"Reminder '{title}' was successfully added."}

    def delete_reminder(self, reminder_id: int) -> dict[str, Any]:
        if not self.logged_in:
            return refused("Device not logged in. Unable to delete the specified reminder.")
        if reminder_id not in self.reminder_list:
            return refused("Reminder ID does not exist.")
        del self.reminder_list[reminder_id]
        return {"status": True, "message": f"Reminder ID {reminder_id} was successfully deleted."}

    def view_all_reminders(self) -> dict[str, Any]:
        if not self.reminder_list:
            return refused("No reminders found.")
        return {"status": True, "reminders": [{k: r[k] for k in ("title", "description", "time", "notified")}
                                              for r in self.reminder_list.values()]}

    def mark_as_notified(self, reminder_id: int) -> dict[str, Any]:
        if reminder_id not in self.reminder_list:
            return refused("Reminder ID does not exist.")
        self.reminder_list[reminder_id]["notified"] = True
        return {"status": True, "message": f"Reminder ID {reminder_id} has been marked as notified."}

    def search_reminders(self, keyword: str) -> dict[str, Any]:
        word = keyword.lower()
        found = [{k: r[k] for k in ("title", "description", "time")} for r in self.reminder_list.values()
                 if word in r["title"].lower() or word in r["description"].lower()]
        if not found:
            return refused("No reminders found containing the keyword.")
        return {"status": True, "reminders": found}


class FoodPlatform(BaseApi):
    NAME = "FoodPlatform"
    SAVED = ("users", "logged_in_users", "orders")
    TOOLS = (*BaseApi.TOOLS, "login_food_platform", "view_logged_in_users", "check_balance",
             "add_food_delivery_order", "get_products", "view_orders", "search_orders")

    def __init__(self, episode: Episode) -> None:
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
            return refused("Wi-Fi is not enabled, unable to login")
        if username not in self.users:
            return refused("User does not exist")
        if self.users[username]["password"] != password:
            return refused("Incorrect password")
        if username in self.logged_in_users:
            return refused(f"{username} is already logged in")
        self.logged_in_users.append(username)
        return {"status": True, "message": f"User {username} has successfully logged in!"}

    def view_logged_in_users(self) -> dict[str, Any]:
        if not self.logged_in_users:
            return refused("No users are currently logged in to the food platform")
        return {"status": True, "logged_in_users": self.logged_in_users}

    def check_balance(self, user_name: str) -> float:
        return self.users[user_name]["balance"] if user_name in self.users else 0.0

    def add_food_delivery_order(self, username: str, merchant_name: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        if username not in self.logged_in_users:
            return refused(f"User {username} is not logged in to the food platform")
        if merchant_name not in self.merchant_list:
            return refused("Merchant does not exist")
        menu = self.merchant_list[merchant_name]["menu"]
        total, lines = 0.0, []
        for item in items:
            product, quantity = item.get("product"), item.get("quantity", 1)
            if not isinstance(quantity, int) or quantity <= 0:
                return refused(f"Invalid quantity {quantity} for product {product}")
            entry = next((p for p in menu if p["product"] == product), None)
            if entry is None:
                return refused(f"Product {product} does not exist in {merchant_name}'s menu")
            total += entry["price"] * quantity
            lines.append({"product": product, "quantity": quantity, "price_per_unit": entry["price"]})
        if total > self.users[username]["balance"]:
            return refused("Insufficient balance to place the order")
        self.users[username]["balance"] -= total
        self.orders.append({"user_name": username, "merchant_name": merchant_name, "items": lines,
                            "total_price": total})
        return {"status": True,
                "message": f"Food delivery order successfully placed with {merchant_name}. Total amount: {total} yuan"}

    def get_products(self, merchant_name: str) -> Any:
        merchant = self.merchant_list.get(merchant_name)
        if not merchant:
            return refused(f"Merchant '{merchant_name}' does not exist")
        return merchant["menu"]

    def view_orders(self, user_name: str) -> dict[str, Any]:
        found = [o for o in self.orders if o["user_name"] == user_name]
        if not found:
            return refused("User has no order records")
        return {"status": True, "orders": found}

    def search_orders(self, keyword: str) -> dict[str, Any]:
        word = keyword.lower()
        found = [o for o in self.orders if word in o["merchant_name"].lower()
                 or any(word in line["product"].lower() for line in o.get("items", []))]
        if not found:
            return refused("No matching orders found")
        return {"status": True, "orders": found}
