r"""tau2-bench as an episode suite of ``spade eval`` (``--suite tau2_bench``).

tau2-bench's own package cannot be installed here (it is not on the package registry; the
registry's ``tau2`` is an unrelated library), so this is an adapter written against the
benchmark's published formats and scoring rules, not its code:

* **Data** (``-o data=FOLDER``): tau2-bench's ``data/tau2/domains`` layout, a folder per
  domain holding ``tasks.json`` (a list of tasks: ``id``, ``user_scenario.instructions``,
  ``initial_state``, ``evaluation_criteria`` with ``actions`` (name + arguments, by the
  ``assistant`` or the ``user``), ``communicate_info``, ``env_assertions``,
  ``nl_assertions``, ``reward_basis``), the domain's database ``db.json`` (or ``db.toml``,
  as the telecom domain ships it; a dual-control domain's ``user_db.json``/``.toml``, if
  any, is merged into its default user database) and its ``policy.md`` (or telecom's
  ``main_policy.md`` with ``tech_support_manual.md``, joined as the benchmark joins them);
  or one such domain folder. ``-o split=NAME`` keeps the tasks of one split of the domain's
  ``split_tasks.json``.
* **A conversation** (half duplex, as the benchmark plays it): the agent is taken to open
  with "Hi! How can I help you today?"; the simulated user (``-o user=openai:URL#MODEL``)
  answers from the task's scenario; each agent message either calls tools (``<tool_call>``
  tags, run in order on this episode's in-memory copy of the domain database, results
  returned) or speaks to the user, who replies. In a dual-control domain (telecom) the user
  has tools too (:data:`USER_SIDES`): they go to the user model as OpenAI declarations, and
  before it says anything to the agent it may call them, any number of rounds, on its own
  side of the world (the results go back to it, never to the agent); after every call the
  domain's sync carries the agent's database to the user's (line active, roaming allowed,
  data over the limit, payment requests). The episode ends when the user's message holds
  ``###STOP###``, ``###TRANSFER###`` or ``###OUT-OF-SCOPE###``, or the agent's holds
  ``###STOP###``; after :data:`MAX_ERRORS` failed tool calls (the agent's and the user's
  together, as the benchmark counts them), :data:`MAX_USER_TOOL_ROUNDS` user tool rounds or
  the turn limit it ends prematurely and scores 0, as the benchmark's ``too many
  errors``/``max steps`` do.
* **Score** (the benchmark's ``evaluate_simulation``, evaluation type ``all``): the
  product of the components in the task's ``reward_basis``: ``DB`` (the database after the
  conversation, and the user's database in a dual-control domain, equal those a fresh world
  reaches when the task's ``actions`` are replayed, each by its requestor, without a sync
  between them, as the benchmark's replay does), ``ENV_ASSERTION`` (each of the task's
  ``env_assertions``, a function of the agent's or the user's side run on the final world,
  answers its ``assert_value``; one that fails or answers no boolean does not hold),
  ``COMMUNICATE`` (every ``communicate_info`` string appears, case-insensitively, in an
  agent message with commas removed), ``ACTION`` (every expected action is matched by a
  call, the agent's or the user's, of that name whose arguments, all or the action's
  ``compare_args``, are equal), ``NL_ASSERTION`` only where the task lists no
  ``nl_assertions`` (then 1, as the benchmark's NL evaluator scores it, no judge needed).
  A reward of 1 is a success; a domain's column is pass^1 (the mean over tasks of each
  task's share of successful trials); :func:`pass_hat_k` gives pass^k over the ``--size``
  trials per task.
* **Initial state**: ``initialization_data`` (``agent_data`` and, in a dual-control domain,
  ``user_data`` merged into the copies), then ``initialization_actions`` in order, each a
  function of the agent's or the user's side called by name (a tool, or one of the side's
  ``ENV_FUNCTIONS``) and followed by the sync; one that fails makes the task's data an error.

**Implemented**, on a copy of the task's ``db.json`` (:data:`DOMAINS`): the ``retail``
domain's tools listed in :data:`RETAIL_TOOLS`; the ``airline`` domain's whole tool set,
:data:`AIRLINE_TOOLS` (``book_reservation``, ``calculate``, ``cancel_reservation``,
``get_reservation_details``, ``get_user_details``, ``list_all_airports``,
``search_direct_flight``, ``search_onestop_flight``, ``send_certificate``,
``transfer_to_human_agents``, ``update_reservation_baggages``, ``update_reservation_flights``,
``update_reservation_passengers``, ``get_flight_status``) over ``flights``, ``users`` and
``reservations``, with the benchmark's checks, errors and database changes (new reservations
``HATHAT``, ``HATHAU``, ``HATHAV``; certificates ``certificate_3221322`` ...; booking time
2024-05-15T15:00:00; insurance 30 and a paid bag 50 dollars; a cancellation appends negative
payments and releases no seat; a flight change takes no seat), the arguments checked against
the declarations as the benchmark's argument models check them (integers leniently, undeclared
fields ignored). The ``telecom`` domain, dual control: the agent's whole tool set,
:data:`TELECOM_TOOLS` (``get_customer_by_phone``, ``get_customer_by_id``,
``get_customer_by_name``, ``get_details_by_id``, ``suspend_line``, ``resume_line``,
``get_bills_for_customer``, ``send_payment_request``, ``get_data_usage``, ``enable_roaming``,
``disable_roaming``, ``transfer_to_human_agents``, ``refuel_data``) over ``plans``,
``customers``, ``lines``, ``bills``, ``devices``, today being 2025-02-25; the user's whole
tool set on their phone, :data:`TELECOM_USER_TOOLS` (status bar, network status and mode,
speed test, airplane mode, SIM, mobile data, roaming, data saver, APN settings, Wi-Fi, Wi-Fi
calling, VPN, apps and their permissions, MMS, reboot, payment requests: thirty tools) with
the benchmark's network search, speeds and texts; the sync (:func:`telecom_sync`); the
environment functions its task files call (``TelecomTools.ENV_FUNCTIONS``,
``TelecomUserTools.ENV_FUNCTIONS``: the scenario, ways to break the phone, every ``assert_*``).
Ids and phone numbers are matched exactly (later benchmark versions also accept a
differently cased id or a differently written phone number, for their voice mode). A new
draft bill (a refuel with none open) is numbered ``Bd0000001``, ``Bd0000002``, ... where the
benchmark draws a random ``B`` + 8 hex digits. **Not implemented**, each reported by name
(the task's episodes fail with the reason and its column lists them as unavailable): the
other domains, the tools in :data:`NOT_IMPLEMENTED` (retail's :data:`RETAIL_NOT_IMPLEMENTED`;
none of airline's or telecom's), the ``NL_ASSERTION`` reward component of a task that lists
``nl_assertions`` (an LLM judge), an environment function a task names that its side lacks,
user-side actions or data in a domain whose user has no tools here, and an initial state
carrying a message history.
"""

from __future__ import annotations

import ast
import copy
import datetime
import json
import math
import operator
import re
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade_core.actions import ToolCall, parse_tool_action
from spade_core.errors import ActionFormatError
from spade_core.evaluation import EpisodeSuite, EvalItem, SuiteContext

from .dialogue import BenchmarkDataError, SimulatedUser, UserToolCall, read_json, resolve_user_backend

AGENT_GREETING = "Hi! How can I help you today?"
STOP, TRANSFER, OUT_OF_SCOPE = "###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"
#: Failed tool calls after which the episode ends prematurely (the benchmark's default).
MAX_ERRORS = 10
#: Agent messages per episode before it is cut off (the harness's turn limit).
MAX_AGENT_TURNS = 60
#: Rounds of tool calls the simulated user of a dual-control domain may make in one episode
#: before it is cut off (the benchmark bounds every step by its ``max_steps``).
MAX_USER_TOOL_ROUNDS = 60
REWARD_TYPES = ("DB", "ENV_ASSERTION", "NL_ASSERTION", "ACTION", "COMMUNICATE")
SCORED_REWARD_TYPES = ("DB", "ENV_ASSERTION", "ACTION", "COMMUNICATE")

USER_GUIDELINES = """You play a customer talking to a customer-service agent, following the scenario below.
- Write only the customer's next message, one short message at a time, in your own words.
- Give the agent information only when it is needed; never invent what the scenario does not say.
- Follow the scenario's instructions about what to accept, refuse or insist on.
- When your request is fully handled, or the conversation cannot go further, reply with ###STOP###.
- If you are transferred to a human agent, reply with ###TRANSFER###; if the scenario does not say
  how to answer something essential, reply with ###OUT-OF-SCOPE###."""

USER_TOOL_GUIDELINES = USER_GUIDELINES + """
- You also have tools that act on your own phone. Call one only when the agent asks you to do or check
  something on it, or when you need its result to answer the agent; never make up what a tool shows:
  tell the agent what its result said.
- In one turn, either call tools or write to the agent, not both. The agent never sees your tool calls
  or their results, only your messages.
- If the agent asks for several actions at once, say you can do one at a time and ask which first.
- If a tool call fails, correct it and try again."""


class Tau2DataError(BenchmarkDataError):
    """A tau2-bench file not in the published format."""


class NotImplementedInAdapter(NotImplementedError):
    """What the task needs and this adapter does not implement (named in the message)."""


# -- tasks ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Action:
    name: str
    arguments: dict[str, Any]
    requestor: str = "assistant"
    compare_args: tuple[str, ...] | None = None

    def matches(self, call: ToolCall) -> bool:
        """The benchmark's ``Action.compare_with_tool_call``."""
        if call.name != self.name:
            return False
        keys = list(call.arguments) if self.compare_args is None else list(self.compare_args)
        if not keys:
            return True
        return ({k: v for k, v in call.arguments.items() if k in keys}
                == {k: v for k, v in self.arguments.items() if k in keys})


@dataclass(frozen=True)
class Tau2Task:
    domain: str
    id: str
    instructions: str
    criteria: dict[str, Any] | None
    actions: tuple[Action, ...]
    reward_basis: tuple[str, ...]
    initial_state: dict[str, Any] | None
    folder: Path

    @property
    def label(self) -> str:
        return f"{self.domain}/{self.id}"


def _need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise Tau2DataError(f"{where}: {what}")


def _instructions(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    _need(isinstance(value, dict), where, "must be a string or an object")
    for key in ("reason_for_call", "task_instructions"):
        _need(isinstance(value.get(key), str), f"{where}.{key}", "must be a string")
    parts = []
    if isinstance(value.get("domain"), str):
        parts.append(f"Domain: {value['domain']}")
    parts.append(f"Reason for call:\n\t{value['reason_for_call']}")
    for key, title in (("known_info", "Known info"), ("unknown_info", "Unknown info")):
        if value.get(key) is not None:
            _need(isinstance(value[key], str), f"{where}.{key}", "must be a string or null")
            parts.append(f"{title}:\n\t{value[key]}")
    parts.append(f"Task instructions:\n\t{value['task_instructions']}")
    return "\n".join(parts)


def parse_task(raw: Any, *, domain: str, path: Path, index: int) -> Tau2Task:
    """One task of ``tasks.json``, checked field by field."""
    where = f"{path}: task [{index}]"
    _need(isinstance(raw, dict), where, "must be an object")
    _need(isinstance(raw.get("id"), (str, int)) and not isinstance(raw.get("id"), bool), f"{where}.id",
          "must be a string")
    where = f"{path}: task {raw['id']!r}"
    scenario = raw.get("user_scenario")
    _need(isinstance(scenario, dict), f"{where}: field user_scenario", "must be an object")
    instructions = _instructions(scenario.get("instructions"), f"{where}: field user_scenario.instructions")
    if scenario.get("persona") is not None:
        _need(isinstance(scenario["persona"], str), f"{where}: field user_scenario.persona", "must be a string")
        instructions = f"Persona:\n\t{scenario['persona']}\nInstructions:\n{instructions}"
    criteria = raw.get("evaluation_criteria")
    actions: list[Action] = []
    basis: tuple[str, ...] = ("DB", "COMMUNICATE")
    if criteria is not None:
        _need(isinstance(criteria, dict), f"{where}: field evaluation_criteria", "must be an object or null")
        for k, a in enumerate(criteria.get("actions") or []):
            at = f"{where}: field evaluation_criteria.actions[{k}]"
            _need(isinstance(a, dict), at, "must be an object")
            _need(isinstance(a.get("name"), str) and a["name"], f"{at}.name", "must be a non-empty string")
            _need(isinstance(a.get("arguments"), dict), f"{at}.arguments", "must be an object")
            cmp = a.get("compare_args")
            _need(cmp is None or (isinstance(cmp, list) and all(isinstance(c, str) for c in cmp)),
                  f"{at}.compare_args", "must be a list of strings or null")
            requestor = a.get("requestor", "assistant")
            _need(requestor in ("assistant", "user"), f"{at}.requestor", "must be 'assistant' or 'user'")
            actions.append(Action(a["name"], a["arguments"], requestor, tuple(cmp) if cmp is not None else None))
        info = criteria.get("communicate_info")
        _need(info is None or (isinstance(info, list) and all(isinstance(s, str) for s in info)),
              f"{where}: field evaluation_criteria.communicate_info", "must be a list of strings or null")
        if "reward_basis" in criteria:
            rb = criteria["reward_basis"]
            _need(isinstance(rb, list) and all(r in REWARD_TYPES for r in rb),
                  f"{where}: field evaluation_criteria.reward_basis", f"must be a list of {', '.join(REWARD_TYPES)}")
            basis = tuple(rb)
    state = raw.get("initial_state")
    _need(state is None or isinstance(state, dict), f"{where}: field initial_state", "must be an object or null")
    return Tau2Task(domain, str(raw["id"]), instructions, criteria, tuple(actions), basis, state, path.parent)


def load_domain(folder: Path) -> list[Tau2Task]:
    """The tasks of one domain folder (``tasks.json``)."""
    path = folder / "tasks.json"
    raw = read_json(path, Tau2DataError)
    if not isinstance(raw, list):
        raise Tau2DataError(f"{path}: must hold a list of tasks, got {type(raw).__name__}")
    tasks = [parse_task(t, domain=folder.name, path=path, index=i) for i, t in enumerate(raw)]
    seen: set[str] = set()
    for t in tasks:
        _need(t.id not in seen, f"{path}: task {t.id!r}", "id appears twice")
        seen.add(t.id)
    return tasks


def domain_folders(data: Path, domains: Sequence[str] = ()) -> list[Path]:
    """The domain folders under ``data`` (or ``data`` itself when it holds ``tasks.json``)."""
    if not data.is_dir():
        raise Tau2DataError(f"{data}: no such folder (expected tau2-bench's data/tau2/domains layout)")
    found = [data] if (data / "tasks.json").is_file() else sorted(p for p in data.iterdir() if (p / "tasks.json").is_file())
    if domains:
        by_name = {p.name: p for p in found}
        missing = [d for d in domains if d not in by_name]
        if missing:
            raise Tau2DataError(f"{data}: no domain {', '.join(missing)} (found: {', '.join(by_name) or 'none'})")
        found = [by_name[d] for d in domains]
    if not found:
        raise Tau2DataError(f"{data}: holds no domain folder with a tasks.json")
    return found


# -- the retail domain's tools, on an in-memory copy of its database ------------------------------

_OPS: dict[type, Callable[..., Any]] = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
                                        ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv,
                                        ast.Pow: operator.pow, ast.USub: operator.neg, ast.UAdd: operator.pos}


def _arithmetic(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _arithmetic(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_arithmetic(node.left), _arithmetic(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_arithmetic(node.operand))
    raise ValueError("Invalid expression")


class _SharedTools:
    """The tools every domain of the benchmark has in the same form."""

    def calculate(self, expression: str) -> str:
        if not all(ch in "0123456789+-*/(). " for ch in expression):
            raise ValueError("Invalid characters in expression")
        try:
            value = _arithmetic(ast.parse(expression, mode="eval"))
        except (SyntaxError, ZeroDivisionError, OverflowError) as exc:
            raise ValueError(f"Invalid expression: {exc}") from None
        return str(round(value, 2))

    def transfer_to_human_agents(self, summary: str) -> str:
        return "Transfer successful"


class RetailTools(_SharedTools):
    """The retail domain's tools over ``db`` (``users``, ``orders``, ``products`` as in
    tau2-bench's ``db.json``), written here from the benchmark's tool descriptions."""

    def __init__(self, db: dict[str, Any]) -> None:
        for key in ("users", "orders", "products"):
            if not isinstance(db.get(key), dict):
                raise Tau2DataError(f"retail db.json: field {key} must be an object")
        self.db = db

    # lookups
    def _order(self, order_id: str) -> dict[str, Any]:
        if order_id not in self.db["orders"]:
            raise ValueError("Order not found")
        return self.db["orders"][order_id]

    def _user(self, user_id: str) -> dict[str, Any]:
        if user_id not in self.db["users"]:
            raise ValueError("User not found")
        return self.db["users"][user_id]

    def _product(self, product_id: str) -> dict[str, Any]:
        if product_id not in self.db["products"]:
            raise ValueError("Product not found")
        return self.db["products"][product_id]

    def _payment_method(self, user_id: str, method_id: str) -> dict[str, Any]:
        methods = self._user(user_id).get("payment_methods", {})
        if method_id not in methods:
            raise ValueError("Payment method not found")
        return methods[method_id]

    @staticmethod
    def _is_gift_card(method: dict[str, Any]) -> bool:
        return method.get("source") == "gift_card"

    # read tools
    def find_user_id_by_email(self, email: str) -> str:
        for user_id, user in self.db["users"].items():
            if str(user.get("email", "")).lower() == email.lower():
                return user_id
        raise ValueError("User not found")

    def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:
        for user_id, user in self.db["users"].items():
            name, address = user.get("name", {}), user.get("address", {})
            if (str(name.get("first_name", "")).lower() == first_name.lower()
                    and str(name.get("last_name", "")).lower() == last_name.lower() and address.get("zip") == zip):
                return user_id
        raise ValueError("User not found")

    def get_user_details(self, user_id: str) -> dict[str, Any]:
        return self._user(user_id)

    def get_order_details(self, order_id: str) -> dict[str, Any]:
        return self._order(order_id)

    def get_product_details(self, product_id: str) -> dict[str, Any]:
        return self._product(product_id)

    def get_item_details(self, item_id: str) -> dict[str, Any]:
        for product in self.db["products"].values():
            if item_id in product.get("variants", {}):
                return product["variants"][item_id]
        raise ValueError("Item not found")

    def list_all_product_types(self) -> str:
        return json.dumps({p["name"]: p["product_id"] for p in self.db["products"].values()}, sort_keys=True)

    # write tools
    def cancel_pending_order(self, order_id: str, reason: str) -> dict[str, Any]:
        order = self._order(order_id)
        if order.get("status") != "pending":
            raise ValueError("Non-pending order cannot be cancelled")
        if reason not in {"no longer needed", "ordered by mistake"}:
            raise ValueError("Invalid reason")
        refunds = []
        for payment in order.get("payment_history", []):
            refunds.append({"transaction_type": "refund", "amount": payment["amount"],
                            "payment_method_id": payment["payment_method_id"]})
            method = self._payment_method(order["user_id"], payment["payment_method_id"])
            if self._is_gift_card(method):
                method["balance"] = round(method["balance"] + payment["amount"], 2)
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        order.setdefault("payment_history", []).extend(refunds)
        return order

    @staticmethod
    def _address(address1: str, address2: str, city: str, state: str, country: str, zip: str) -> dict[str, str]:
        return {"address1": address1, "address2": address2, "city": city, "state": state, "country": country,
                "zip": zip}

    def modify_pending_order_address(self, order_id: str, address1: str, address2: str, city: str, state: str,
                                     country: str, zip: str) -> dict[str, Any]:
        order = self._order(order_id)
        if "pending" not in str(order.get("status")):
            raise ValueError("Non-pending order cannot be modified")
        order["address"] = self._address(address1, address2, city, state, country, zip)
        return order

    def modify_user_address(self, user_id: str, address1: str, address2: str, city: str, state: str,
                            country: str, zip: str) -> dict[str, Any]:
        user = self._user(user_id)
        user["address"] = self._address(address1, address2, city, state, country, zip)
        return user

    def return_delivered_order_items(self, order_id: str, item_ids: list[str], payment_method_id: str) -> dict[str, Any]:
        order = self._order(order_id)
        if order.get("status") != "delivered":
            raise ValueError("Non-delivered order cannot be returned")
        method = self._payment_method(order["user_id"], payment_method_id)
        history = order.get("payment_history") or [{}]
        if not self._is_gift_card(method) and payment_method_id != history[0].get("payment_method_id"):
            raise ValueError("Payment method should be the original payment method")
        present = [item["item_id"] for item in order.get("items", [])]
        if not isinstance(item_ids, list) or any(item_ids.count(i) > present.count(i) for i in item_ids):
            raise ValueError("Some item not found")
        order["status"] = "return requested"
        order["return_items"] = sorted(item_ids)
        order["return_payment_method_id"] = payment_method_id
        return order


def _fn(name: str, description: str, *, optional: tuple[str, ...] = (),
        **params: tuple[str | dict[str, Any], str]) -> dict[str, Any]:
    """An OpenAI-format declaration; a parameter's kind is a JSON type name, ``array`` (of
    strings) or a JSON schema of its own; every parameter is required but those named in
    ``optional``."""
    props: dict[str, Any] = {}
    for key, (kind, text) in params.items():
        key = key.rstrip("_")
        if isinstance(kind, dict):
            props[key] = {**kind, "description": text}
        else:
            props[key] = {"type": "array", "items": {"type": "string"}, "description": text} if kind == "array" \
                else {"type": kind, "description": text}
    return {"type": "function", "function": {"name": name, "description": description,
                                             "parameters": {"type": "object", "properties": props,
                                                            "required": [k for k in props if k not in optional]}}}


_S = "string"
_ADDRESS = {"address1": (_S, "first address line"), "address2": (_S, "second address line, or ''"),
            "city": (_S, "city"), "state": (_S, "state"), "country": (_S, "country"), "zip_": (_S, "zip code")}
#: The retail tools this adapter implements, with their OpenAI-format declarations.
RETAIL_TOOLS: dict[str, dict[str, Any]] = {t["function"]["name"]: t for t in [
    _fn("find_user_id_by_email", "Find a user id by email.", email=(_S, "the user's email")),
    _fn("find_user_id_by_name_zip", "Find a user id by first name, last name and zip code.",
        first_name=(_S, "first name"), last_name=(_S, "last name"), zip_=(_S, "zip code")),
    _fn("get_user_details", "Get a user's details, including their orders.", user_id=(_S, "user id")),
    _fn("get_order_details", "Get an order's status and details.", order_id=(_S, "order id, such as '#W0000000'")),
    _fn("get_product_details", "Get a product's inventory details.", product_id=(_S, "product id")),
    _fn("get_item_details", "Get an item's (a product variant's) details.", item_id=(_S, "item id")),
    _fn("list_all_product_types", "List the name and product id of every product type."),
    _fn("calculate", "Calculate an arithmetic expression (numbers, + - * / and parentheses).",
        expression=(_S, "the expression")),
    _fn("transfer_to_human_agents", "Transfer the user to a human agent with a summary of the issue.",
        summary=(_S, "summary of the user's issue")),
    _fn("cancel_pending_order", "Cancel a pending order (after the user's explicit confirmation).",
        order_id=(_S, "order id"), reason=(_S, "'no longer needed' or 'ordered by mistake'")),
    _fn("modify_pending_order_address", "Change the shipping address of a pending order (after confirmation).",
        order_id=(_S, "order id"), **_ADDRESS),
    _fn("modify_user_address", "Change a user's default address (after confirmation).",
        user_id=(_S, "user id"), **_ADDRESS),
    _fn("return_delivered_order_items", "Request the return of items of a delivered order (after confirmation).",
        order_id=(_S, "order id"), item_ids=("array", "item ids to return"),
        payment_method_id=(_S, "the original payment method or a gift card")),
]}
#: Retail tools of the benchmark this adapter does not implement (a task needing one is unavailable).
RETAIL_NOT_IMPLEMENTED = ("exchange_delivered_order_items", "modify_pending_order_items",
                          "modify_pending_order_payment")

# -- the airline domain's tools, on an in-memory copy of its database -----------------------------


def _lax_int(value: Any, where: str) -> int:
    """An integer argument as the benchmark's argument models take one (pydantic's lax mode):
    an int or bool, a float without a fractional part, or a string holding such a number."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                raise ValueError(f"{where}: must be an integer, got {value!r}") from None
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return int(value)
        raise ValueError(f"{where}: must be an integer, got {value!r} (a fractional or non-finite number)")
    raise ValueError(f"{where}: must be an integer, got {type(value).__name__}")


def _lax_float(value: Any, where: str) -> float:
    """A number argument as the benchmark's argument models take one: an int, a float or a
    string holding a number (booleans are not numbers here)."""
    if isinstance(value, bool):
        raise ValueError(f"{where}: must be a number, got {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise ValueError(f"{where}: must be a number, got {value!r}")


_TRUE, _FALSE = {"true", "1", "yes", "on", "t", "y"}, {"false", "0", "no", "off", "f", "n"}


def _lax_bool(value: Any, where: str) -> bool:
    """A boolean argument taken leniently (``true``/``false``, ``1``/``0``, ``"yes"``/``"no"``)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"{where}: must be a boolean, got {value!r}")


def _conform(schema: dict[str, Any], value: Any, where: str) -> Any:
    """``value`` checked against a declaration's parameter schema and converted as the
    benchmark's argument models convert it: integers, numbers and booleans leniently,
    strings and enumerations strictly, ``null`` where the type lists it, objects reduced to
    their declared fields (others ignored, or refused where ``additionalProperties`` is
    false; an object without declared fields passed whole), a missing required field an
    error. Raises :class:`ValueError` naming the argument."""
    kind = schema.get("type")
    if isinstance(kind, list):  # e.g. ["string", "null"]
        if value is None and "null" in kind:
            return None
        kind = next((k for k in kind if k != "null"), None)
    if "enum" in schema:
        if not isinstance(value, str) or value not in schema["enum"]:
            raise ValueError(f"{where}: must be one of {', '.join(map(repr, schema['enum']))}, got {value!r}")
        return value
    if kind == "string":
        if not isinstance(value, str):
            raise ValueError(f"{where}: must be a string, got {type(value).__name__}")
        return value
    if kind == "integer":
        return _lax_int(value, where)
    if kind == "number":
        return _lax_float(value, where)
    if kind == "boolean":
        return _lax_bool(value, where)
    if kind == "array":
        if not isinstance(value, list):
            raise ValueError(f"{where}: must be an array, got {type(value).__name__}")
        return [_conform(schema.get("items", {}), v, f"{where}[{i}]") for i, v in enumerate(value)]
    if kind == "object":
        if not isinstance(value, dict):
            raise ValueError(f"{where}: must be an object, got {type(value).__name__}")
        if "properties" not in schema:
            return dict(value)
        out: dict[str, Any] = {}
        for key, sub in schema["properties"].items():
            if key in value:
                out[key] = _conform(sub, value[key], f"{where}.{key}" if where else key)
            elif key in schema.get("required", ()):
                raise ValueError(f"{where + '.' if where else ''}{key}: field required")
        if schema.get("additionalProperties") is False:
            extra = sorted(k for k in value if k not in schema["properties"])
            if extra:
                raise ValueError(f"{where + '.' if where else ''}{extra[0]}: extra fields not permitted")
        return out
    return value


#: The airports ``list_all_airports`` names (IATA code, city), as the benchmark's tool lists them.
AIRLINE_AIRPORTS = (
    ("SFO", "San Francisco"), ("JFK", "New York"), ("LAX", "Los Angeles"), ("ORD", "Chicago"),
    ("DFW", "Dallas"), ("DEN", "Denver"), ("SEA", "Seattle"), ("ATL", "Atlanta"), ("MIA", "Miami"),
    ("BOS", "Boston"), ("PHX", "Phoenix"), ("IAH", "Houston"), ("LAS", "Las Vegas"), ("MCO", "Orlando"),
    ("EWR", "Newark"), ("CLT", "Charlotte"), ("MSP", "Minneapolis"), ("DTW", "Detroit"),
    ("PHL", "Philadelphia"), ("LGA", "LaGuardia"),
)
#: What the benchmark's airline tools fix: the ids new reservations and certificates take (in
#: order, first unused), the booking time, the fees (dollars).
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
NEW_CERTIFICATE_IDS = ("certificate_3221322", "certificate_3221323", "certificate_3221324")
BOOKING_TIME = "2024-05-15T15:00:00"
INSURANCE_FEE, BAG_FEE = 30, 50


class AirlineTools(_SharedTools):
    """The airline domain's tools over ``db`` (``flights``, ``users``, ``reservations`` as in
    tau2-bench's ``db.json``), written here from the benchmark's tool semantics: the same
    checks, errors and database changes (what a call leaves in the database is what the DB
    score compares). Arguments are checked against :data:`AIRLINE_TOOLS` first
    (:meth:`_arguments`), as the benchmark checks them against its argument models."""

    def __init__(self, db: dict[str, Any]) -> None:
        for key in ("flights", "users", "reservations"):
            if not isinstance(db.get(key), dict):
                raise Tau2DataError(f"airline db.json: field {key} must be an object")
        self.db = db

    def _arguments(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return _conform(AIRLINE_TOOLS[name]["function"]["parameters"], arguments, "")

    # lookups
    def _user(self, user_id: str) -> dict[str, Any]:
        if user_id not in self.db["users"]:
            raise ValueError(f"User {user_id} not found")
        return self.db["users"][user_id]

    def _reservation(self, reservation_id: str) -> dict[str, Any]:
        if reservation_id not in self.db["reservations"]:
            raise ValueError(f"Reservation {reservation_id} not found")
        return self.db["reservations"][reservation_id]

    def _flight(self, flight_number: str) -> dict[str, Any]:
        if flight_number not in self.db["flights"]:
            raise ValueError(f"Flight {flight_number} not found")
        return self.db["flights"][flight_number]

    def _flight_date(self, flight_number: str, date: str) -> dict[str, Any]:
        dates = self._flight(flight_number).get("dates", {})
        if date not in dates:
            raise ValueError(f"Flight {flight_number} not found on date {date}")
        return dates[date]

    def _bookable(self, flight_number: str, date: str, cabin: str, passengers: int) -> dict[str, Any]:
        """The flight's date entry when it is open for booking with ``passengers`` seats left."""
        day = self._flight_date(flight_number, date)
        if day.get("status") != "available":
            raise ValueError(f"Flight {flight_number} not available on date {date}")
        if day["available_seats"][cabin] < passengers:
            raise ValueError(f"Not enough seats on flight {flight_number}")
        return day

    def _direct(self, date: str, origin: str | None, destination: str | None,
                leave_after: str | None = None) -> list[dict[str, Any]]:
        found = []
        for flight in self.db["flights"].values():
            day = flight.get("dates", {}).get(date)
            if (day is None or day.get("status") != "available"
                    or (origin is not None and flight["origin"] != origin)
                    or (destination is not None and flight["destination"] != destination)
                    or (leave_after is not None and flight["scheduled_departure_time_est"] < leave_after)):
                continue
            found.append({"flight_number": flight["flight_number"], "origin": flight["origin"],
                          "destination": flight["destination"], "status": "available",
                          "scheduled_departure_time_est": flight["scheduled_departure_time_est"],
                          "scheduled_arrival_time_est": flight["scheduled_arrival_time_est"], "date": None,
                          "available_seats": copy.deepcopy(day["available_seats"]),
                          "prices": copy.deepcopy(day["prices"])})
        return found

    def _charge(self, user: dict[str, Any], payment_id: str, amount: int) -> dict[str, Any] | None:
        """A change's charge (a refund when negative) on one stored method: no certificate, a
        gift card must cover it and is debited; the payment record, none for 0."""
        methods = user.get("payment_methods", {})
        if payment_id not in methods:
            raise ValueError("Payment method not found")
        method = methods[payment_id]
        if method.get("source") == "certificate":
            raise ValueError("Certificate cannot be used to update reservation")
        if method.get("source") == "gift_card":
            if method["amount"] < amount:
                raise ValueError("Gift card balance is not enough")
            method["amount"] -= amount
        return {"payment_id": payment_id, "amount": amount} if amount != 0 else None

    # read tools
    def get_user_details(self, user_id: str) -> dict[str, Any]:
        return self._user(user_id)

    def get_reservation_details(self, reservation_id: str) -> dict[str, Any]:
        return self._reservation(reservation_id)

    def get_flight_status(self, flight_number: str, date: str) -> str:
        return str(self._flight_date(flight_number, date).get("status"))

    def list_all_airports(self) -> list[dict[str, str]]:
        return [{"iata": code, "city": city} for code, city in AIRLINE_AIRPORTS]

    def search_direct_flight(self, origin: str, destination: str, date: str) -> list[dict[str, Any]]:
        return self._direct(date, origin, destination)

    def search_onestop_flight(self, origin: str, destination: str, date: str) -> list[list[dict[str, Any]]]:
        pairs = []
        for first in self._direct(date, origin, None):
            first["date"] = date
            # the benchmark's rule for a first leg arriving the next day: May 2024, the day
            # number plus one, unpadded
            second_date = f"2024-05-{int(date[-2:]) + 1}" if "+1" in first["scheduled_arrival_time_est"] else date
            for second in self._direct(second_date, first["destination"], destination,
                                       leave_after=first["scheduled_arrival_time_est"]):
                second["date"] = second_date
                pairs.append([first, second])
        return pairs

    # write tools
    def book_reservation(self, user_id: str, origin: str, destination: str, flight_type: str, cabin: str,
                         flights: list[dict[str, Any]], passengers: list[dict[str, Any]],
                         payment_methods: list[dict[str, Any]], total_baggages: int, nonfree_baggages: int,
                         insurance: str) -> dict[str, Any]:
        user = self._user(user_id)
        reservation_id = next((r for r in NEW_RESERVATION_IDS if r not in self.db["reservations"]), None)
        if reservation_id is None:
            raise ValueError("Too many reservations")
        booked, days, price = [], [], 0
        for leg in flights:
            flight = self._flight(leg["flight_number"])
            day = self._bookable(leg["flight_number"], leg["date"], cabin, len(passengers))
            booked.append({"flight_number": leg["flight_number"], "origin": flight["origin"],
                           "destination": flight["destination"], "date": leg["date"],
                           "price": day["prices"][cabin]})
            days.append(day)
            price += day["prices"][cabin] * len(passengers)
        if insurance == "yes":
            price += INSURANCE_FEE * len(passengers)
        price += BAG_FEE * nonfree_baggages
        methods = user.get("payment_methods", {})
        for pay in payment_methods:
            if pay["payment_id"] not in methods:
                raise ValueError(f"Payment method {pay['payment_id']} not found")
            method = methods[pay["payment_id"]]
            if method.get("source") in ("gift_card", "certificate") and method["amount"] < pay["amount"]:
                raise ValueError(f"Not enough balance in payment method {pay['payment_id']}")
        paid = sum(pay["amount"] for pay in payment_methods)
        if paid != price:
            raise ValueError(f"Payment amount does not add up, total price is {price}, but paid {paid}")
        for pay in payment_methods:  # every check passed: take the money
            method = methods[pay["payment_id"]]
            if method.get("source") == "gift_card":
                method["amount"] -= pay["amount"]
            elif method.get("source") == "certificate":
                del methods[pay["payment_id"]]  # a certificate is used up whole
        for day in days:
            day["available_seats"][cabin] -= len(passengers)
        reservation = {"reservation_id": reservation_id, "user_id": user_id, "origin": origin,
                       "destination": destination, "flight_type": flight_type, "cabin": cabin, "flights": booked,
                       "passengers": copy.deepcopy(passengers), "payment_history": copy.deepcopy(payment_methods),
                       "created_at": BOOKING_TIME, "total_baggages": total_baggages,
                       "nonfree_baggages": nonfree_baggages, "insurance": insurance, "status": None}
        self.db["reservations"][reservation_id] = reservation
        user["reservations"].append(reservation_id)
        return reservation

    def cancel_reservation(self, reservation_id: str) -> dict[str, Any]:
        reservation = self._reservation(reservation_id)
        # every payment reversed in the history (no balance credited, no seat released)
        history = reservation.setdefault("payment_history", [])
        history.extend([{"payment_id": p["payment_id"], "amount": -p["amount"]} for p in list(history)])
        reservation["status"] = "cancelled"
        return reservation

    def update_reservation_baggages(self, reservation_id: str, total_baggages: int, nonfree_baggages: int,
                                    payment_id: str) -> dict[str, Any]:
        reservation = self._reservation(reservation_id)
        user = self._user(reservation["user_id"])
        charge = self._charge(user, payment_id, BAG_FEE * max(0, nonfree_baggages - reservation["nonfree_baggages"]))
        if charge is not None:
            reservation["payment_history"].append(charge)
        reservation["total_baggages"] = total_baggages
        reservation["nonfree_baggages"] = nonfree_baggages
        return reservation

    def update_reservation_flights(self, reservation_id: str, cabin: str, flights: list[dict[str, Any]],
                                   payment_id: str) -> dict[str, Any]:
        reservation = self._reservation(reservation_id)
        user = self._user(reservation["user_id"])
        travellers = len(reservation["passengers"])
        legs, price = [], 0
        for leg in flights:
            # a segment kept as it is (same flight, date and cabin) keeps the price paid for it
            kept = next((f for f in reservation["flights"] if f["flight_number"] == leg["flight_number"]
                         and f["date"] == leg["date"] and cabin == reservation["cabin"]), None)
            if kept is None:
                flight = self._flight(leg["flight_number"])
                day = self._bookable(leg["flight_number"], leg["date"], cabin, travellers)
                kept = {"flight_number": leg["flight_number"], "origin": flight["origin"],
                        "destination": flight["destination"], "date": leg["date"], "price": day["prices"][cabin]}
            legs.append(kept)
            price += kept["price"] * travellers
        price -= sum(f["price"] for f in reservation["flights"]) * travellers
        charge = self._charge(user, payment_id, price)
        if charge is not None:
            reservation["payment_history"].append(charge)
        reservation["flights"] = legs  # seats are not taken or given back, as in the benchmark
        reservation["cabin"] = cabin
        return reservation

    def update_reservation_passengers(self, reservation_id: str, passengers: list[dict[str, Any]]) -> dict[str, Any]:
        reservation = self._reservation(reservation_id)
        if len(passengers) != len(reservation["passengers"]):
            raise ValueError("Number of passengers does not match")
        reservation["passengers"] = copy.deepcopy(passengers)
        return reservation

    def send_certificate(self, user_id: str, amount: int) -> str:
        user = self._user(user_id)
        methods = user.setdefault("payment_methods", {})
        for certificate_id in NEW_CERTIFICATE_IDS:
            if certificate_id not in methods:
                methods[certificate_id] = {"id": certificate_id, "amount": float(amount), "source": "certificate"}
                return f"Certificate {certificate_id} added to user {user_id} with amount {amount}."
        raise ValueError("Too many certificates")


_I = "integer"
_CABIN = {"type": "string", "enum": ["business", "economy", "basic_economy"]}
_FLIGHTS = {"type": "array", "items": {"type": "object", "required": ["flight_number", "date"], "properties": {
    "flight_number": {"type": "string", "description": "flight number, such as 'HAT170'"},
    "date": {"type": "string", "description": "the flight's date, YYYY-MM-DD"}}}}
_PASSENGERS = {"type": "array", "items": {"type": "object", "required": ["first_name", "last_name", "dob"],
                                          "properties": {
    "first_name": {"type": "string", "description": "first name"},
    "last_name": {"type": "string", "description": "last name"},
    "dob": {"type": "string", "description": "date of birth, YYYY-MM-DD"}}}}
_PAYMENTS = {"type": "array", "items": {"type": "object", "required": ["payment_id", "amount"], "properties": {
    "payment_id": {"type": "string", "description": "a payment method id of the user's profile"},
    "amount": {"type": "integer", "description": "dollars paid with it"}}}}
_PAY_ID = (_S, "a payment method id of the user's profile, such as 'credit_card_1234567' or 'gift_card_1234567' "
               "(a certificate cannot pay for a change)")
#: The airline tools this adapter implements (the benchmark's whole airline tool set), with
#: their OpenAI-format declarations; a call's arguments are checked against them.
AIRLINE_TOOLS: dict[str, dict[str, Any]] = {t["function"]["name"]: t for t in [
    _fn("book_reservation", "Book a new reservation for a user; the payments must add up to the total price "
        "(each flight's cabin price per passenger, 30 per passenger with insurance, 50 per non-free bag).",
        user_id=(_S, "the booking user's id, such as 'jane_roe_123'"),
        origin=(_S, "IATA code of the trip's origin, such as 'JFK'"),
        destination=(_S, "IATA code of the trip's destination, such as 'SFO'"),
        flight_type=({"type": "string", "enum": ["one_way", "round_trip"]}, "the trip type"),
        cabin=(_CABIN, "the cabin class of every flight"),
        flights=(_FLIGHTS, "every flight of the reservation"),
        passengers=(_PASSENGERS, "every passenger"),
        payment_methods=(_PAYMENTS, "how the total is paid: stored payment methods and amounts"),
        total_baggages=(_I, "total number of checked bags"),
        nonfree_baggages=(_I, "number of checked bags that are paid for"),
        insurance=({"type": "string", "enum": ["yes", "no"]}, "whether travel insurance is bought")),
    _fn("calculate", "Calculate an arithmetic expression (numbers, + - * / and parentheses).",
        expression=(_S, "the expression")),
    _fn("cancel_reservation", "Cancel a whole reservation; its payments are refunded to their methods.",
        reservation_id=(_S, "reservation id, such as 'AB12CD'")),
    _fn("get_reservation_details", "Get a reservation's details.", reservation_id=(_S, "reservation id")),
    _fn("get_user_details", "Get a user's details, including their payment methods and reservations.",
        user_id=(_S, "user id")),
    _fn("list_all_airports", "List every airport's IATA code and city."),
    _fn("search_direct_flight", "Search the direct flights between two airports on a date.",
        origin=(_S, "IATA code of the origin"), destination=(_S, "IATA code of the destination"),
        date=(_S, "the date, YYYY-MM-DD")),
    _fn("search_onestop_flight", "Search the connections with one stop between two airports on a date (pairs of "
        "flights).", origin=(_S, "IATA code of the origin"), destination=(_S, "IATA code of the destination"),
        date=(_S, "the date of the first flight, YYYY-MM-DD")),
    _fn("send_certificate", "Send a travel certificate (a credit for future travel) to a user.",
        user_id=(_S, "user id"), amount=(_I, "the certificate's amount in dollars")),
    _fn("transfer_to_human_agents", "Transfer the user to a human agent with a summary of the issue; only when "
        "the user asks for one or the request cannot be handled with these tools.",
        summary=(_S, "summary of the user's issue")),
    _fn("update_reservation_baggages", "Change a reservation's checked bags; added non-free bags are charged "
        "50 each.", reservation_id=(_S, "reservation id"), total_baggages=(_I, "the new total of checked bags"),
        nonfree_baggages=(_I, "the new number of paid bags"), payment_id=_PAY_ID),
    _fn("update_reservation_flights", "Change a reservation's flights or cabin; the price difference is charged "
        "(or refunded) on one payment method.", reservation_id=(_S, "reservation id"),
        cabin=(_CABIN, "the cabin class of the whole reservation"),
        flights=(_FLIGHTS, "every flight of the new itinerary, those kept unchanged included"), payment_id=_PAY_ID),
    _fn("update_reservation_passengers", "Replace a reservation's passengers (their number cannot change).",
        reservation_id=(_S, "reservation id"), passengers=(_PASSENGERS, "every passenger, in order")),
    _fn("get_flight_status", "Get a flight's status on a date.", flight_number=(_S, "flight number"),
        date=(_S, "the date, YYYY-MM-DD")),
]}
#: Airline tools of the benchmark this adapter does not implement: none (all fourteen are).
AIRLINE_NOT_IMPLEMENTED: tuple[str, ...] = ()

# -- the telecom domain (dual control): the agent's tools over the telecom database, the user's phone ----------

#: The telecom domain's fixed "today" (its tools date suspensions, charges and cycles by it).
TELECOM_TODAY = datetime.date(2025, 2, 25)
LINE_ACTIVE, LINE_SUSPENDED, LINE_PENDING = "Active", "Suspended", "Pending Activation"
BILL_DRAFT, BILL_AWAITING, BILL_PAID, BILL_OVERDUE = "Draft", "Awaiting Payment", "Paid", "Overdue"


def _first_of_next_month(day: datetime.date) -> datetime.date:
    return (day.replace(day=1) + datetime.timedelta(days=32)).replace(day=1)


class TelecomTools:
    """The telecom domain's agent tools over ``db`` (tau2-bench's telecom database: lists
    ``plans``, ``customers``, ``lines``, ``bills``, ``devices``), written here from the
    benchmark's tool semantics: the same lookups, checks, errors and database changes.

    :data:`ENV_FUNCTIONS` are not tools: the task files' initial states and assertions call
    them by name (``set_data_usage``, ``suspend_line_for_overdue_bill``, ``assert_*``)."""

    ENV_FUNCTIONS = ("set_data_usage", "suspend_line_for_overdue_bill", "assert_data_refueling_amount",
                     "assert_line_status", "assert_overdue_bill_exists", "assert_no_overdue_bill")

    def __init__(self, db: dict[str, Any]) -> None:
        for key in ("plans", "customers", "lines", "bills", "devices"):
            if not isinstance(db.get(key, []), list):
                raise Tau2DataError(f"telecom db: field {key} must be a list")
            db.setdefault(key, [])
        self.db = db
        self._new_bills = 0

    def _arguments(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return _conform(TELECOM_TOOLS[name]["function"]["parameters"], arguments, "")

    # lookups (the benchmark's messages)
    def _find(self, table: str, key: str, value: str, what: str) -> dict[str, Any]:
        for row in self.db[table]:
            if row.get(key) == value:
                return row
        raise ValueError(f"{what} with ID {value} not found")

    def _customer(self, customer_id: str) -> dict[str, Any]:
        return self._find("customers", "customer_id", customer_id, "Customer")

    def _line(self, line_id: str) -> dict[str, Any]:
        return self._find("lines", "line_id", line_id, "Line")

    def _plan(self, plan_id: str) -> dict[str, Any]:
        return self._find("plans", "plan_id", plan_id, "Plan")

    def _bill(self, bill_id: str) -> dict[str, Any]:
        return self._find("bills", "bill_id", bill_id, "Bill")

    def _line_by_phone(self, phone_number: str) -> dict[str, Any]:
        for line in self.db["lines"]:
            if line.get("phone_number") == phone_number:
                return line
        raise ValueError(f"Line with phone number {phone_number} not found")

    def _target_line(self, customer_id: str, line_id: str) -> dict[str, Any]:
        if line_id not in self._customer(customer_id).get("line_ids", []):
            raise ValueError(f"Line {line_id} not found for customer {customer_id}")
        return self._line(line_id)

    def _bills_awaiting_payment(self, customer: dict[str, Any]) -> list[dict[str, Any]]:
        return [b for b in (self._bill(i) for i in customer.get("bill_ids", [])) if b.get("status") == BILL_AWAITING]

    def _new_bill_id(self) -> str:
        """A new draft bill's id: ``B`` and 8 hex digits as the benchmark's, but counted
        (``Bd0000001``, ...) where the benchmark draws them at random."""
        while True:
            self._new_bills += 1
            bill_id = f"Bd{self._new_bills:07x}"
            if not any(b.get("bill_id") == bill_id for b in self.db["bills"]):
                return bill_id

    def _charge(self, customer_id: str, amount: float, description: str) -> None:
        """A one-time charge (a credit when negative) on the customer's draft bill, one made
        for next month when there is none."""
        customer = self._customer(customer_id)
        draft = next((b for b in (self._bill(i) for i in customer.get("bill_ids", [])) if b.get("status") == BILL_DRAFT),
                     None)
        if draft is None:
            start = _first_of_next_month(TELECOM_TODAY)
            draft = {"bill_id": self._new_bill_id(), "customer_id": customer_id, "period_start": start.isoformat(),
                     "period_end": (_first_of_next_month(start) - datetime.timedelta(days=1)).isoformat(),
                     "issue_date": start.isoformat(), "total_due": 0.0,
                     "due_date": (start + datetime.timedelta(days=14)).isoformat(), "line_items": [],
                     "status": BILL_DRAFT}
            self.db["bills"].append(draft)
            customer.setdefault("bill_ids", []).append(draft["bill_id"])
        draft.setdefault("line_items", []).append({"description": description, "amount": amount,
                                                   "date": TELECOM_TODAY.isoformat(),
                                                   "item_type": "Credit" if amount < 0 else "Charge"})
        draft["total_due"] = draft.get("total_due", 0.0) + amount

    # read tools
    def get_customer_by_phone(self, phone_number: str) -> dict[str, Any]:
        for customer in self.db["customers"]:
            if customer.get("phone_number") == phone_number:
                return customer
            if any(self._line(i).get("phone_number") == phone_number for i in customer.get("line_ids", [])):
                return customer
        raise ValueError(f"Customer with phone number {phone_number} not found")

    def get_customer_by_id(self, customer_id: str) -> dict[str, Any]:
        return self._customer(customer_id)

    def get_customer_by_name(self, full_name: str, dob: str) -> list[dict[str, Any]]:
        return [c for c in self.db["customers"]
                if str(c.get("full_name", "")).lower() == full_name.lower() and c.get("date_of_birth") == dob]

    def get_details_by_id(self, id: str) -> dict[str, Any]:  # the benchmark names the parameter id
        for prefix, lookup in (("L", self._line), ("D", lambda i: self._find("devices", "device_id", i, "Device")),
                               ("B", self._bill), ("C", self._customer), ("P", self._plan)):
            if id.startswith(prefix):
                return lookup(id)
        raise ValueError(f"Unknown ID format or type: {id}")

    def get_bills_for_customer(self, customer_id: str, limit: int = 12) -> list[dict[str, Any]]:
        bills = [self._bill(i) for i in self._customer(customer_id).get("bill_ids", [])]
        return sorted(bills, key=lambda b: str(b.get("issue_date")), reverse=True)[:limit]

    def get_data_usage(self, customer_id: str, line_id: str) -> dict[str, Any]:
        line = self._target_line(customer_id, line_id)
        plan = self._plan(line["plan_id"])
        return {"line_id": line_id, "data_used_gb": line.get("data_used_gb", 0.0),
                "data_limit_gb": plan.get("data_limit_gb"), "data_refueling_gb": line.get("data_refueling_gb", 0.0),
                "cycle_end_date": (_first_of_next_month(TELECOM_TODAY) - datetime.timedelta(days=1)).isoformat()}

    # write tools
    def suspend_line(self, customer_id: str, line_id: str, reason: str) -> dict[str, Any]:
        line = self._target_line(customer_id, line_id)
        if line.get("status") != LINE_ACTIVE:
            raise ValueError("Line must be active to suspend")
        line["status"] = LINE_SUSPENDED
        line["suspension_start_date"] = TELECOM_TODAY.isoformat()
        return {"message": "Line suspended successfully. $5/month holding fee will apply.", "line": line}

    def resume_line(self, customer_id: str, line_id: str) -> dict[str, Any]:
        line = self._target_line(customer_id, line_id)
        if line.get("status") not in (LINE_SUSPENDED, LINE_PENDING):
            raise ValueError("Line must be suspended to resume")
        line["status"] = LINE_ACTIVE
        line["suspension_start_date"] = None
        return {"message": "Line resumed successfully", "line": line}

    def send_payment_request(self, customer_id: str, bill_id: str) -> str:
        customer = self._customer(customer_id)
        if self._bills_awaiting_payment(customer):
            raise ValueError("A bill is already awaiting payment for this customer")
        if bill_id not in customer.get("bill_ids", []):
            raise ValueError(f"Bill {bill_id} not found for customer {customer_id}")
        self._bill(bill_id)["status"] = BILL_AWAITING  # the benchmark does not check for a paid bill either
        return f"Payment request sent to the customer for bill {bill_id}"

    def enable_roaming(self, customer_id: str, line_id: str) -> str:
        line = self._target_line(customer_id, line_id)
        if line.get("roaming_enabled"):
            return "Roaming was already enabled"
        line["roaming_enabled"] = True
        return "Roaming enabled successfully"

    def disable_roaming(self, customer_id: str, line_id: str) -> str:
        line = self._target_line(customer_id, line_id)
        if not line.get("roaming_enabled"):
            return "Roaming was already disabled"
        line["roaming_enabled"] = False
        return "Roaming disabled successfully"

    def transfer_to_human_agents(self, summary: str) -> str:
        return "Transfer successful"

    def refuel_data(self, customer_id: str, line_id: str, gb_amount: float) -> dict[str, Any]:
        line = self._target_line(customer_id, line_id)
        if gb_amount <= 0:
            raise ValueError("Refuel amount must be positive")
        plan = self._plan(line["plan_id"])
        price = float(plan["data_refueling_price_per_gb"])
        charge = gb_amount * price
        line["data_refueling_gb"] = line.get("data_refueling_gb", 0.0) + gb_amount
        self._charge(customer_id, charge, f"Data refueling: {gb_amount} GB at ${price}/GB")
        return {"message": f"Successfully added {gb_amount} GB of data for line {line_id} for ${charge:.2f}",
                "new_data_refueling_gb": line["data_refueling_gb"], "charge": charge}

    # environment functions (initial states, assertions)
    def set_data_usage(self, customer_id: str, line_id: str, data_used_gb: float) -> str:
        self._target_line(customer_id, line_id)["data_used_gb"] = data_used_gb
        return f"Data usage set to {data_used_gb} GB for line {line_id}"

    def suspend_line_for_overdue_bill(self, customer_id: str, line_id: str, new_bill_id: str,
                                      contract_ended: bool) -> str:
        line = self._line(line_id)
        if line.get("status") != LINE_ACTIVE:
            raise ValueError("Line must be active to suspend for unpaid bill")
        amount = float(self._plan(line["plan_id"])["price_per_month"])
        if amount <= 0:
            raise ValueError("Amount must be positive for overdue bill")
        customer = self._customer(customer_id)
        if any(self._bill(i).get("status") == BILL_OVERDUE for i in customer.get("bill_ids", [])):
            raise ValueError("Customer already has an overdue bill")
        last_month_end = TELECOM_TODAY.replace(day=1) - datetime.timedelta(days=1)
        last_month_start = last_month_end.replace(day=1)
        self.db["bills"].append({
            "bill_id": new_bill_id, "customer_id": customer_id, "period_start": last_month_start.isoformat(),
            "period_end": last_month_end.isoformat(), "issue_date": last_month_start.isoformat(),
            "total_due": 0.0 + amount, "due_date": (last_month_start + datetime.timedelta(days=14)).isoformat(),
            "line_items": [{"description": f"Charge for line {line_id}", "amount": amount,
                            "date": TELECOM_TODAY.isoformat(), "item_type": "Charge"}],
            "status": BILL_OVERDUE})
        customer.setdefault("bill_ids", []).append(new_bill_id)
        line["status"] = LINE_SUSPENDED
        line["suspension_start_date"] = TELECOM_TODAY.isoformat()
        if contract_ended:
            line["contract_end_date"] = last_month_end.isoformat()
        return f"Line {line_id} suspended for unpaid bill {new_bill_id}. Contract ended: {contract_ended}"

    def assert_data_refueling_amount(self, customer_id: str, line_id: str, expected_amount: float) -> bool:
        return abs(self._target_line(customer_id, line_id).get("data_refueling_gb", 0.0) - expected_amount) < 1e-6

    def assert_line_status(self, customer_id: str, line_id: str, expected_status: str) -> bool:
        return self._target_line(customer_id, line_id).get("status") == expected_status

    def assert_overdue_bill_exists(self, customer_id: str, overdue_bill_id: str) -> bool:
        if overdue_bill_id not in self._customer(customer_id).get("bill_ids", []):
            raise ValueError(f"Overdue bill {overdue_bill_id} not found")
        if self._bill(overdue_bill_id).get("status") != BILL_OVERDUE:
            raise ValueError(f"Overdue bill {overdue_bill_id} is not overdue")
        return True

    def assert_no_overdue_bill(self, overdue_bill_id: str) -> bool:
        try:
            return self._bill(overdue_bill_id).get("status") == BILL_PAID
        except ValueError:
            return True  # no such bill: nothing overdue


_ID = {"customer_id": (_S, "the customer's id, such as 'C1001'"), "line_id": (_S, "the line's id, such as 'L1001'")}
#: The telecom agent tools this adapter implements (the benchmark's whole telecom agent tool
#: set), with their OpenAI-format declarations; a call's arguments are checked against them.
TELECOM_TOOLS: dict[str, dict[str, Any]] = {t["function"]["name"]: t for t in [
    _fn("get_customer_by_phone", "Find the customer whose contact number or one of whose lines has this phone number.",
        phone_number=(_S, "the phone number, such as '555-123-2002'")),
    _fn("get_customer_by_id", "Get a customer by their id.", customer_id=_ID["customer_id"]),
    _fn("get_customer_by_name", "Find customers by full name and date of birth (several may match).",
        full_name=(_S, "the customer's full name"), dob=(_S, "date of birth, YYYY-MM-DD")),
    _fn("get_details_by_id", "Get the record of a customer (C...), line (L...), device (D...), bill (B...) or plan "
        "(P...) by its id.", id=(_S, "the id")),
    _fn("suspend_line", "Suspend an active line of the customer (at most 6 months; a $5/month holding fee "
        "applies).", **_ID, reason=(_S, "why the line is suspended")),
    _fn("resume_line", "Resume a suspended (or pending-activation) line of the customer.", **_ID),
    _fn("get_bills_for_customer", "List the customer's bills, newest first.", optional=("limit",),
        customer_id=_ID["customer_id"], limit=(_I, "at most this many bills (default 12)")),
    _fn("send_payment_request", "Send the customer a payment request for one of their bills (it then awaits "
        "payment; only one bill may await payment at a time; check first that the bill is not paid).",
        customer_id=_ID["customer_id"], bill_id=(_S, "the bill's id")),
    _fn("get_data_usage", "Get a line's data usage this billing cycle: used, plan limit, refueled data and the "
        "cycle's end date.", **_ID),
    _fn("enable_roaming", "Enable international roaming on a line of the customer.", **_ID),
    _fn("disable_roaming", "Disable international roaming on a line of the customer.", **_ID),
    _fn("transfer_to_human_agents", "Transfer the user to a human agent with a summary of the issue; only when the "
        "user asks for one or the issue cannot be solved with these tools and the policy.",
        summary=(_S, "summary of the user's issue")),
    _fn("refuel_data", "Add data to a line for this billing cycle, charged on the customer's next bill at the "
        "plan's price per GB.", **_ID, gb_amount=("number", "gigabytes to add")),
]}
#: Telecom agent tools of the benchmark this adapter does not implement: none (all thirteen are).
TELECOM_NOT_IMPLEMENTED: tuple[str, ...] = ()

# the user's phone and surroundings (the telecom user database)
_SIGNAL_BARS = {"none": "📵 No Signal", "poor": "📶¹ Poor", "fair": "📶² Fair", "good": "📶³ Good",
                "excellent": "📶⁴ Excellent"}
_SPEED_RANGE = {"2G": (0.1, 0.4), "3G": (1.0, 5.0), "4G": (10.0, 100.0), "5G": (50.0, 500.0), "none": (0.0, 0.0)}
_SIGNAL_FACTOR = {"poor": 0.2, "fair": 0.5, "good": 0.8, "excellent": 1.0, "none": 0.0}
_SPEED_ADVICE = {"Very Poor": "Connection is very slow. Basic web browsing might be difficult.",
                 "Poor": "Connection is slow. Web browsing may be sluggish, streaming difficult.",
                 "Fair": "Connection is okay for web browsing and some standard definition streaming.",
                 "Good": "Connection is good for most activities, including HD streaming.",
                 "Excellent": "Connection is very fast."}
NETWORK_MODES = ("4g_5g_preferred", "4g_only", "3g_only", "2g_only")
_MODE_TECH = {"4g_only": "4G", "3g_only": "3G", "2g_only": "2G"}
_SIM_TEXT = {"active": "Your SIM card is active and working.", "missing": "No SIM card detected in the phone.",
             "locked_pin": "The SIM card is locked with a PIN code.",
             "locked_puk": "The SIM card is locked with a PUK code."}
_PERMISSIONS = ("sms", "storage", "phone", "network")
APN_FIELDS = ("apn_name", "reset_at_reboot", "mms_apn", "mmsc_url", "mms_proxy", "mms_port")


def default_apn_settings() -> dict[str, Any]:
    return {"apn_name": "internet", "reset_at_reboot": False, "mms_apn": "mms",
            "mmsc_url": "http://mms.carrier.com/mms/wapenc", "mms_proxy": None, "mms_port": None}


def _app(name: str, *granted: str) -> dict[str, Any]:
    return {"app_name": name, "permissions": {p: p in granted for p in _PERMISSIONS}}


def default_telecom_user_db() -> dict[str, Any]:
    """The benchmark's default phone (5G with good signal, mobile data on, Wi-Fi off, the
    messaging and browser apps) and surroundings (at home, every network technology in
    reach, the line active)."""
    return {
        "device": {
            "sim_card_status": "active", "sim_card_missing": False, "airplane_mode": False,
            "network_signal_strength": "good", "network_technology_connected": "5G",
            "network_connection_status": "connected", "battery_level": 80, "data_enabled": True,
            "roaming_enabled": False, "network_mode_preference": "4g_5g_preferred",
            "active_apn_settings": default_apn_settings(), "wifi_enabled": False, "wifi_connected": False,
            "wifi_ssid": None, "wifi_signal_strength": "none", "wifi_calling_enabled": False,
            "wifi_calling_mms_over_wifi": False, "data_saver_mode": False, "vpn_enabled_setting": False,
            "vpn_connected": False, "vpn_details": None,
            "app_statuses": {"messaging": _app("messaging", "sms", "storage", "phone"),
                             "browser": _app("browser", "network", "storage")}},
        "surroundings": {
            "name": None, "phone_number": None, "is_abroad": False, "roaming_allowed": False,
            "signal_strength": {"2G": "poor", "3G": "fair", "4G": "good", "5G": "excellent"},
            "mobile_data_usage_exceeded": False, "line_active": True, "payment_request": None},
    }


class TelecomUserTools:
    """The telecom user's tools over ``db`` (``device``: the phone's settings and state;
    ``surroundings``: where the user is, what the network allows them, a pending payment
    request), written here from the benchmark's user-tool semantics: each tool changes the
    phone as there, re-runs its network search where the benchmark does, and answers the
    user with the same texts (a status bar after each change).

    :data:`ENV_FUNCTIONS` are not tools: the task files' initial states break the phone with
    them, and their assertions check it (``assert_*``)."""

    ENV_FUNCTIONS = ("set_user_info", "set_user_location", "turn_airplane_mode_on", "turn_airplane_mode_off",
                     "unseat_sim_card", "lock_sim_card", "turn_data_on", "turn_data_off", "turn_roaming_on",
                     "turn_roaming_off", "turn_data_saver_mode_on", "turn_data_saver_mode_off", "break_apn_settings",
                     "break_apn_mms_setting", "set_wifi_calling", "break_vpn", "remove_app_permission",
                     "simulate_network_search", "assert_airplane_mode_status", "assert_service_status",
                     "assert_mobile_data_status", "assert_mobile_roaming_status",
                     "assert_mobile_data_saver_mode_status", "assert_internet_speed", "assert_internet_not_excellent",
                     "assert_can_send_mms", "assert_mobile_data_usage_exceeded")
    DEFAULT_VPN = {"server_address": "192.168.1.1", "protocol": "OpenVPN", "server_performance": "excellent"}

    def __init__(self, db: dict[str, Any]) -> None:
        if not isinstance(db.get("device"), dict) or not isinstance(db.get("surroundings"), dict):
            raise Tau2DataError("telecom user db: fields device and surroundings must be objects")
        self.db = db

    def _arguments(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return _conform(TELECOM_USER_TOOLS[name]["function"]["parameters"], arguments, "")

    @property
    def device(self) -> dict[str, Any]:
        return self.db["device"]

    @property
    def surroundings(self) -> dict[str, Any]:
        return self.db["surroundings"]

    # the phone's state, as the benchmark derives it
    def _sim_status(self) -> str:
        return "missing" if self.device["sim_card_missing"] else self.device["sim_card_status"]

    def _no_service(self) -> None:
        self.device.update(network_connection_status="no_service", network_technology_connected="none",
                           network_signal_strength="none")

    def simulate_network_search(self) -> None:
        """Re-attach to the network: by the SIM, the preferred mode and the signal where the
        user is; no service in airplane mode, with a broken APN or an inactive line."""
        d, signals = self.device, self.surroundings["signal_strength"]
        if self._sim_status() == "active":
            d["network_connection_status"] = "connected"
            mode = d["network_mode_preference"]
            tech = _MODE_TECH.get(mode, "4G")
            if mode == "4g_5g_preferred" and signals.get("5G", "none") != "none":
                tech = "5G"
            d["network_technology_connected"] = tech
            d["network_signal_strength"] = signals.get(tech, "none")
        else:
            self._no_service()
        if (d["airplane_mode"] or d["active_apn_settings"]["apn_name"] == "broken"
                or not self.surroundings["line_active"]):
            self._no_service()

    def _mobile_data_working(self) -> bool:
        d, s = self.device, self.surroundings
        if d["airplane_mode"] or d["network_signal_strength"] == "none":
            return False
        if d["network_connection_status"] == "no_service":
            return False
        if s["is_abroad"] and not (d["roaming_enabled"] and s["roaming_allowed"]):
            return False
        return bool(d["data_enabled"]) and not s["mobile_data_usage_exceeded"]

    def _speed(self) -> tuple[float | None, str]:
        if not self._mobile_data_working():
            return None, "No Connection"
        d = self.device
        factor = 0.1 if (d["vpn_connected"] and d["vpn_details"]
                         and d["vpn_details"].get("server_performance") == "poor") else 1.0
        if d["data_saver_mode"]:
            factor *= 0.2
        low, high = _SPEED_RANGE.get(d["network_technology_connected"], (0.0, 0.0))
        speed = round((low + high) / 2.0 * _SIGNAL_FACTOR.get(d["network_signal_strength"], 0.0) * factor, 2)
        for bound, text in ((1, "Very Poor"), (5, "Poor"), (25, "Fair"), (100, "Good")):
            if speed < bound:
                return speed, text
        return speed, "Excellent"

    def _can_send_mms(self) -> bool:
        d = self.device
        if not self._mobile_data_working() or d["network_technology_connected"] == "2G":
            return False
        if d["wifi_calling_enabled"] and d["wifi_calling_mms_over_wifi"]:
            return False  # the carrier does not carry MMS over Wi-Fi
        if d["active_apn_settings"].get("mmsc_url") is None:
            return False
        app = d["app_statuses"].get("messaging")
        return app is not None and bool(app["permissions"].get("storage") and app["permissions"].get("sms"))

    def _status_bar(self) -> str:
        d = self.device
        parts = []
        if d["airplane_mode"]:
            parts.append("✈️ Airplane Mode")
        else:
            parts.append(_SIGNAL_BARS.get(d["network_signal_strength"], _SIGNAL_BARS["none"]))
            if d["network_technology_connected"] != "none":
                parts.append(d["network_technology_connected"])
            if d["data_enabled"] and d["network_technology_connected"] != "none":
                parts.append("📱 Data Enabled")
                if d["data_saver_mode"]:
                    parts.append("🔽 Data Saver")
            else:
                parts.append("📵 Data Disabled")
        if d["wifi_enabled"] and d["wifi_connected"]:
            parts.append(f"📡 Connected to {d['wifi_ssid']}" if d["wifi_ssid"] else "📡 Enabled")
        if d["vpn_connected"]:
            parts.append("🔒 VPN Connected")
        parts.append(f"🔋 {d['battery_level']}%")
        return " | ".join(parts)

    def _with_bar(self, text: str) -> str:
        return f"{text}\nStatus Bar: {self._status_bar()}"

    def _flip(self, key: str, *, search: bool = True) -> bool:
        self.device[key] = not self.device[key]
        if search:
            self.simulate_network_search()
        return self.device[key]

    # read tools
    def check_status_bar(self) -> str:
        return f"Status Bar: {self._status_bar()}"

    def check_network_status(self) -> str:
        d = self.device
        lines = [f"Airplane Mode: {'ON' if d['airplane_mode'] else 'OFF'}", f"SIM Card Status: {self._sim_status()}",
                 f"Cellular Connection: {d['network_connection_status']}",
                 f"Cellular Signal: {d['network_signal_strength']}",
                 f"Cellular Network Type: {d['network_technology_connected']}",
                 f"Mobile Data Enabled: {'Yes' if d['data_enabled'] else 'No'}",
                 f"Data Roaming Enabled: {'Yes' if d['roaming_enabled'] else 'No'}",
                 f"Wi-Fi Radio: {'ON' if d['wifi_enabled'] else 'OFF'}",
                 f"Wi-Fi Connected: {'Yes' if d['wifi_connected'] else 'No'}"]
        if d["wifi_connected"]:
            lines.append(f"Connected Wi-Fi Network: {d['wifi_ssid']}")
        return "\n".join(lines)

    def check_network_mode_preference(self) -> str:
        return f"Network Mode Preference: {self.device['network_mode_preference']}"

    def run_speed_test(self) -> str:
        speed, text = self._speed()
        if speed is None:
            return f"Speed test failed: {text or 'Could not determine speed'}."
        return f"Speed Test Result: {speed:.2f} Mbps ({text}). {_SPEED_ADVICE.get(text, '')}"

    def check_sim_status(self) -> str:
        return _SIM_TEXT.get(self._sim_status(), f"Unknown SIM status: {self._sim_status()}")

    def check_data_restriction_status(self) -> str:
        return "Data Saver mode is ON (limits data usage)." if self.device["data_saver_mode"] \
            else "Data Saver mode is OFF."

    def check_apn_settings(self) -> str:
        apn = self.device["active_apn_settings"]
        return (f"Current APN Name: {apn['apn_name'] or 'Not Set'}\nMMSC URL (for picture messages): "
                f"{apn.get('mmsc_url') or 'Not Set'}\n(These are technical settings, usually best left unchanged.)")

    def check_wifi_status(self) -> str:
        d = self.device
        if not d["wifi_enabled"]:
            return "Wi-Fi is turned OFF."
        if d["wifi_connected"]:
            return f"Wi-Fi is ON and connected to '{d['wifi_ssid']}'. Signal strength: {d['wifi_signal_strength']}."
        return "Wi-Fi is ON but not connected to any network."

    def check_wifi_calling_status(self) -> str:
        return f"Wi-Fi Calling is currently turned {'ON' if self.device['wifi_calling_enabled'] else 'OFF'}."

    def check_vpn_status(self) -> str:
        d = self.device
        if d["vpn_connected"]:
            if d["vpn_details"]:
                return f"VPN is ON and connected. Details: {d['vpn_details']}"
            return "VPN is ON and connected (no specific details available)."
        if d["vpn_enabled_setting"]:
            return "VPN is turned ON in settings, but currently not connected."
        return "VPN is turned OFF."

    def check_installed_apps(self) -> str:
        return f"The following apps are installed on the phone: {', '.join(self.device['app_statuses'])}"

    def _granted(self, app_name: str) -> list[str] | None:
        app = self.device["app_statuses"].get(app_name)
        if app is None:
            return None
        return [p.replace("_", " ").lower() for p, on in app["permissions"].items() if on]

    def check_app_status(self, app_name: str) -> str:
        granted = self._granted(app_name)
        if granted is None:
            return f"App '{app_name}' not found on this phone."
        if not granted:
            return f"Status for App: {app_name}\n - Permissions: None granted."
        return "\n".join([f"Status for App: {app_name}", " - Permissions Granted:", *(f"   - {p}" for p in granted)])

    def check_app_permissions(self, app_name: str) -> str:
        granted = self._granted(app_name)
        if granted is None:
            return f"App '{app_name}' not found on this phone."
        if not granted:
            return f"App '{app_name}' currently has no permissions granted."
        return f"App '{app_name}' has permission for: {', '.join(granted)}."

    def can_send_mms(self) -> str:
        return f"Your messaging app {'can' if self._can_send_mms() else 'cannot'} send MMS messages."

    def check_payment_request(self) -> str:
        request = self.surroundings["payment_request"]
        if request is None:
            return "No payment request has been made."
        return f"You have a payment request for bill {request['bill_id']} of {request['amount_due']} USD."

    # write tools
    def set_network_mode_preference(self, mode: str) -> str:
        if mode not in NETWORK_MODES:
            return self._with_bar(f"Failed to set network mode: '{mode}' is not a valid option. "
                                  f"Please use one of: {', '.join(NETWORK_MODES)}")
        self.device["network_mode_preference"] = mode
        self.simulate_network_search()
        return self._with_bar(f"Preferred Network Mode set to: {mode}")

    def _airplane(self) -> bool:
        d = self.device
        was_on = d["airplane_mode"]
        d["airplane_mode"] = not was_on
        if was_on:
            d["network_connection_status"] = "searching"
        if not was_on or d["wifi_enabled"]:  # going on, or off with the Wi-Fi radio on: Wi-Fi dropped
            d.update(wifi_connected=False, wifi_ssid=None, wifi_signal_strength="none")
        if not was_on and d["vpn_connected"]:
            d.update(vpn_connected=False, vpn_details=None)
        self.simulate_network_search()
        return d["airplane_mode"]

    def toggle_airplane_mode(self) -> str:
        return self._with_bar(f"Airplane Mode is now {'ON' if self._airplane() else 'OFF'}.")

    def reseat_sim_card(self) -> str:
        self.device["sim_card_missing"] = False
        self.simulate_network_search()
        return self._with_bar("SIM card re-seated successfully.")

    def toggle_data(self) -> str:
        return self._with_bar(f"Mobile Data is now {'ON' if self._flip('data_enabled') else 'OFF'}.")

    def toggle_roaming(self) -> str:
        return self._with_bar(f"Data Roaming is now {'ON' if self._flip('roaming_enabled') else 'OFF'}.")

    def toggle_data_saver_mode(self) -> str:
        return self._with_bar(f"Data Saver Mode is now {'ON' if self._flip('data_saver_mode', search=False) else 'OFF'}.")

    def set_apn_settings(self, apn_settings: dict[str, Any]) -> str:
        settings = {**default_apn_settings(), **apn_settings}
        self.device["active_apn_settings"] = settings
        self.simulate_network_search()
        return self._with_bar(f"APN settings set to: {settings['apn_name']}")

    def reset_apn_settings(self) -> str:
        self.device["active_apn_settings"]["reset_at_reboot"] = True
        self.simulate_network_search()
        return self._with_bar("APN settings will reset at reboot.")

    def toggle_wifi(self) -> str:
        d = self.device
        if d["airplane_mode"]:
            return self._with_bar("Cannot change Wi-Fi settings while Airplane Mode is ON.")
        d["wifi_enabled"] = not d["wifi_enabled"]
        if not d["wifi_enabled"]:
            d.update(wifi_connected=False, wifi_ssid=None, wifi_signal_strength="none")
        return self._with_bar(f"Wi-Fi is now {'ON' if d['wifi_enabled'] else 'OFF'}.")

    def toggle_wifi_calling(self) -> str:
        on = self._flip("wifi_calling_enabled", search=False)
        return self._with_bar(f"Wi-Fi Calling is now {'ON' if on else 'OFF'}.")

    def connect_vpn(self) -> str:
        d = self.device
        if d["vpn_connected"]:
            return "VPN already connected."
        d.update(vpn_connected=True, vpn_details=dict(self.DEFAULT_VPN))
        return self._with_bar("VPN connected successfully.")

    def disconnect_vpn(self) -> str:
        d = self.device
        was = bool(d["vpn_connected"])
        if was:
            d.update(vpn_connected=False, vpn_details=None)
        return self._with_bar("VPN disconnected successfully." if was else "No active VPN connection to disconnect.")

    def grant_app_permission(self, app_name: str, permission: str) -> str:
        app = self.device["app_statuses"].get(app_name)
        permission = permission.lower()
        if app is None:
            ok, text = False, f"App '{app_name}' not found. Cannot grant permission."
        elif permission not in app["permissions"]:
            ok, text = False, (f"Permission '{permission}' not tracked for app '{app_name}', available permissions: "
                               f"{list(app['permissions'])}")
        else:
            app["permissions"][permission] = True
            ok, text = True, f"Permission '{permission}' granted to app '{app_name}'."
        return self._with_bar(f"{'Success' if ok else 'Error'}. {text}")

    def reboot_device(self) -> str:
        d, lines = self.device, []
        if d["active_apn_settings"].get("reset_at_reboot"):
            lines.append("Resetting APN settings...")
            d["active_apn_settings"] = default_apn_settings()
        lines.append("Restarting network services...")
        d["network_connection_status"] = "searching"
        self.simulate_network_search()
        return self._with_bar("\n".join(lines))

    def make_payment(self) -> str:
        request = self.surroundings["payment_request"]
        if request is None:
            return "You do not have a payment request."
        request["paid"] = True
        return f"Payment of {request['amount_due']} USD has been made for bill {request['bill_id']}."

    # environment functions: the scenario, breaking the phone
    def set_user_info(self, name: str, phone_number: str) -> None:
        self.surroundings.update(name=name, phone_number=phone_number)

    def set_user_location(self, abroad: bool) -> None:
        self.surroundings["is_abroad"] = abroad

    def turn_airplane_mode_on(self) -> str:
        if not self._airplane():
            self._airplane()
        return "Airplane Mode is now ON."

    def turn_airplane_mode_off(self) -> str:
        if self._airplane():
            self._airplane()
        return "Airplane Mode is now OFF."

    def unseat_sim_card(self) -> str:
        self.device["sim_card_missing"] = True
        self.simulate_network_search()
        return "SIM card un-seated successfully."

    def lock_sim_card(self, mode: str) -> str:
        if mode in ("pin", "puk"):
            self.device["sim_card_status"] = f"locked_{mode}"
        self.simulate_network_search()
        return f"SIM card locked successfully in {mode} mode."

    def turn_data_on(self) -> str:
        self.device["data_enabled"] = True  # no network search, as in the benchmark
        return "Data connection restored."

    def turn_data_off(self) -> str:
        if self._flip("data_enabled"):
            self._flip("data_enabled")
        return "Data connection broken."

    def turn_roaming_on(self) -> str:
        if not self._flip("roaming_enabled"):
            self._flip("roaming_enabled")
        return "Data Roaming is now ON."

    def turn_roaming_off(self) -> str:
        if self._flip("roaming_enabled"):
            self._flip("roaming_enabled")
        return "Data Roaming is now OFF."

    def turn_data_saver_mode_on(self) -> str:
        self.device["data_saver_mode"] = True
        return "Data Saver Mode is now ON."

    def turn_data_saver_mode_off(self) -> str:
        self.device["data_saver_mode"] = False
        return "Data Saver Mode is now OFF."

    def break_apn_settings(self) -> str:
        self.device["active_apn_settings"]["apn_name"] = "broken"
        self.simulate_network_search()
        return "APN settings broken. Please call reset_apn_settings() to fix."

    def break_apn_mms_setting(self) -> str:
        self.device["active_apn_settings"]["mmsc_url"] = None
        return "APN MMS setting broken. Please call reset_apn_settings() to fix."

    def set_wifi_calling(self, enabled: bool, mms_over_wifi: bool | None = None) -> str:
        self.device["wifi_calling_enabled"] = enabled
        text = f"Wi-Fi Calling is now {'ON' if enabled else 'OFF'}."
        if mms_over_wifi is not None:
            self.device["wifi_calling_mms_over_wifi"] = mms_over_wifi
            text += f"\nMMS over Wi-Fi is now {'ON' if mms_over_wifi else 'OFF'}."
        return text

    def break_vpn(self) -> str:
        self.connect_vpn()
        if self.device["vpn_details"] is not None:
            self.device["vpn_details"]["server_performance"] = "poor"
        return "VPN connection broken."

    def remove_app_permission(self, app_name: str, permission: str) -> tuple[bool, str]:
        app = self.device["app_statuses"].get(app_name)
        permission = permission.lower()
        if app is None:
            return False, f"App '{app_name}' not found. Cannot remove permission."
        if permission not in app["permissions"]:
            return False, f"Permission '{permission}' not tracked for app '{app_name}'."
        app["permissions"][permission] = False
        return True, f"Permission '{permission}' removed from app '{app_name}'."

    # environment functions: assertions
    def assert_airplane_mode_status(self, expected_status: bool) -> bool:
        return self.device["airplane_mode"] == expected_status

    def assert_service_status(self, expected_status: str) -> bool:
        return self.device["network_connection_status"] == expected_status

    def assert_mobile_data_status(self, expected_status: bool) -> bool:
        return self._mobile_data_working() == expected_status

    def assert_mobile_roaming_status(self, expected_status: bool) -> bool:
        return self.device["roaming_enabled"] == expected_status

    def assert_mobile_data_saver_mode_status(self, expected_status: bool) -> bool:
        return self.device["data_saver_mode"] == expected_status

    def assert_internet_speed(self, expected_speed: float, expected_desc: str | None = None) -> bool:
        speed, text = self._speed()
        speed = speed or 0.0
        return speed >= expected_speed and (expected_desc is None or text.lower() == expected_desc.lower())

    def assert_internet_not_excellent(self) -> bool:
        return self._speed()[1].lower() != "excellent"

    def assert_can_send_mms(self, expected_status: bool) -> bool:
        return self._can_send_mms() == expected_status

    def assert_mobile_data_usage_exceeded(self, expected_status: bool) -> bool:
        return self.surroundings["mobile_data_usage_exceeded"] == expected_status


def telecom_sync(tools: TelecomTools, user: TelecomUserTools) -> None:
    """What the telecom database tells the phone, after every step (the benchmark's
    ``sync_tools``): whether the user's line is active, roams, is over its data; a paid
    payment request marks its bill paid; a bill awaiting payment becomes a payment request."""
    s = user.surroundings
    phone = s.get("phone_number")
    if phone is None:
        return
    try:
        line = tools._line_by_phone(phone)
        plan = tools._plan(line["plan_id"])
    except ValueError as exc:
        raise Tau2DataError(f"telecom: the user's phone number {phone} has no line and plan in the database ({exc})") \
            from None
    s["line_active"] = line.get("status") == LINE_ACTIVE
    s["roaming_allowed"] = bool(line.get("roaming_enabled"))
    s["mobile_data_usage_exceeded"] = (line.get("data_used_gb", 0.0)
                                       >= plan.get("data_limit_gb", 0.0) + line.get("data_refueling_gb", 0.0))
    request = s.get("payment_request")
    if request is not None and request.get("paid"):
        tools._bill(request["bill_id"])["status"] = BILL_PAID
        s["payment_request"] = None
    if s.get("payment_request") is None:
        waiting = tools._bills_awaiting_payment(tools.get_customer_by_phone(phone))
        if waiting:
            s["payment_request"] = {"bill_id": waiting[0]["bill_id"], "amount_due": float(waiting[0]["total_due"]),
                                    "paid": False}


_NO_ARGS: dict[str, tuple[str | dict[str, Any], str]] = {}
_APN = {"type": "object", "additionalProperties": False, "properties": {
    "apn_name": {"type": "string", "enum": ["internet", "broken"], "description": "the APN's name"},
    "reset_at_reboot": {"type": "boolean", "description": "reset the APN settings at the next reboot"},
    "mms_apn": {"type": ["string", "null"], "description": "the APN used for MMS"},
    "mmsc_url": {"type": ["string", "null"], "description": "the MMS service centre's URL (MMS needs it)"},
    "mms_proxy": {"type": ["string", "null"], "description": "the MMS proxy, if any"},
    "mms_port": {"type": ["integer", "null"], "description": "the MMS proxy's port, if any"}}}
_APP = {"app_name": (_S, "the app's name, such as 'messaging'")}
#: The telecom user's tools (the benchmark's whole user tool set), with the OpenAI-format
#: declarations the simulated user is given; a call's arguments are checked against them.
TELECOM_USER_TOOLS: dict[str, dict[str, Any]] = {t["function"]["name"]: t for t in [
    _fn("check_status_bar", "Show the icons of your phone's status bar: signal, network type, mobile data (on, "
        "off, data saver), Wi-Fi, VPN, battery."),
    _fn("check_network_status", "Show your phone's connection: airplane mode, SIM, cellular connection, signal and "
        "network type, mobile data, data roaming, Wi-Fi."),
    _fn("check_network_mode_preference", "Show which cellular network type your phone prefers."),
    _fn("set_network_mode_preference", "Change the cellular network type your phone prefers; faster types (4G/5G) "
        "give faster data.", mode=(_S, "one of '4g_5g_preferred', '4g_only', '3g_only', '2g_only'")),
    _fn("run_speed_test", "Measure your mobile internet download speed and say what it is good for."),
    _fn("toggle_airplane_mode", "Turn Airplane Mode on or off (on cuts every radio: cellular, Wi-Fi, Bluetooth)."),
    _fn("check_sim_status", "Show whether your SIM card works, is missing, or is locked with a PIN or PUK."),
    _fn("reseat_sim_card", "Take the SIM card out and put it back in."),
    _fn("toggle_data", "Turn mobile data on or off."),
    _fn("toggle_roaming", "Turn data roaming on or off (needed for mobile data outside your carrier's network)."),
    _fn("check_data_restriction_status", "Show whether Data Saver mode is limiting your data."),
    _fn("toggle_data_saver_mode", "Turn Data Saver mode on or off (it saves data and slows it)."),
    _fn("check_apn_settings", "Show the APN settings your phone uses for mobile data and picture messages (MMS)."),
    _fn("set_apn_settings", "Replace your phone's APN settings (fields left out take their default).",
        apn_settings=(_APN, "the new APN settings")),
    _fn("reset_apn_settings", "Reset your APN settings to the defaults (applied at the next reboot)."),
    _fn("check_wifi_status", "Show whether Wi-Fi is on, the network it is connected to, and its signal."),
    _fn("toggle_wifi", "Turn the Wi-Fi radio on or off."),
    _fn("check_wifi_calling_status", "Show whether Wi-Fi Calling (calls over Wi-Fi instead of cellular) is on."),
    _fn("toggle_wifi_calling", "Turn Wi-Fi Calling on or off."),
    _fn("check_vpn_status", "Show whether a VPN is on and connected, with its details."),
    _fn("connect_vpn", "Connect your VPN."),
    _fn("disconnect_vpn", "Disconnect your VPN (it may slow your connection or change what you can reach)."),
    _fn("check_installed_apps", "List the apps installed on your phone."),
    _fn("check_app_status", "Show an app's details: the permissions it has.", **_APP),
    _fn("check_app_permissions", "Show which permissions an app has (such as storage, sms, phone, network).", **_APP),
    _fn("grant_app_permission", "Give an app a permission it needs.", **_APP,
        permission=(_S, "the permission, lowercase, such as 'storage' or 'sms'")),
    _fn("can_send_mms", "Check whether your messaging app can send MMS (picture) messages."),
    _fn("reboot_device", "Restart your phone (clears many temporary glitches; applies a pending APN reset)."),
    _fn("check_payment_request", "Check whether the agent has sent you a payment request."),
    _fn("make_payment", "Pay the bill of the payment request the agent sent you."),
]}


#: Domains whose tools are implemented.
DOMAINS: dict[str, tuple[type, dict[str, dict[str, Any]]]] = {"retail": (RetailTools, RETAIL_TOOLS),
                                                               "airline": (AirlineTools, AIRLINE_TOOLS),
                                                               "telecom": (TelecomTools, TELECOM_TOOLS)}
#: Per implemented domain, the benchmark's tools of that domain this adapter lacks.
NOT_IMPLEMENTED: dict[str, tuple[str, ...]] = {"retail": RETAIL_NOT_IMPLEMENTED, "airline": AIRLINE_NOT_IMPLEMENTED,
                                               "telecom": TELECOM_NOT_IMPLEMENTED}


@dataclass(frozen=True)
class UserSide:
    """A dual-control domain's user side: the user's tools over the user database, their
    declarations, the default user database, and what the agent's database tells it."""

    tools: type
    declared: dict[str, dict[str, Any]]
    default_db: Callable[[], dict[str, Any]]
    sync: Callable[[Any, Any], None]


#: Domains whose user has tools too (dual control).
USER_SIDES: dict[str, UserSide] = {
    "telecom": UserSide(TelecomUserTools, TELECOM_USER_TOOLS, default_telecom_user_db, telecom_sync)}


def _deep_update(target: dict[str, Any], update: dict[str, Any]) -> None:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _deep_update(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def _canonical(db: dict[str, Any]) -> str:
    return json.dumps(db, sort_keys=True, ensure_ascii=False)


def _run(tools: Any, name: str, arguments: dict[str, Any], declared: dict[str, Any]) -> tuple[str, bool]:
    """A tool call's result text and whether it failed (``Error: ...``, as the benchmark returns)."""
    if name not in declared:
        return f"Error: Tool '{name}' not found.", True
    try:
        if hasattr(tools, "_arguments"):  # a domain whose tools check their arguments against the declarations
            arguments = tools._arguments(name, arguments)
        value = getattr(tools, name)(**arguments)
    except (TypeError, ValueError, KeyError) as exc:
        return f"Error: {exc}", True
    return (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)), False


def _side_functions(domain: str, side: str) -> set[str]:
    """What a task file may call by name on one side of the domain: its tools and its
    environment functions (initial-state actions, assertions)."""
    if side == "assistant":
        cls, declared = DOMAINS[domain]
    elif domain in USER_SIDES:
        cls, declared = USER_SIDES[domain].tools, USER_SIDES[domain].declared
    else:
        return set()
    return set(declared) | set(getattr(cls, "ENV_FUNCTIONS", ()))


def _env_calls(task: Tau2Task) -> list[tuple[str, dict[str, Any]]]:
    """The task's environment function calls, named: its initial-state actions and, when
    scored, its assertions."""
    state = task.initial_state or {}
    calls = [(f"initialization action {k}", a) for k, a in enumerate(state.get("initialization_actions") or [])]
    if task.criteria is not None and "ENV_ASSERTION" in task.reward_basis:
        calls += [(f"env assertion {k}", a) for k, a in enumerate(task.criteria.get("env_assertions") or [])]
    return calls


def _nl_assertions(task: Tau2Task) -> list[Any]:
    """The task's natural-language assertions (an ``NL_ASSERTION`` component without any is
    1 in the benchmark, which then calls no judge)."""
    return list((task.criteria or {}).get("nl_assertions") or [])


def check_supported(task: Tau2Task) -> None:
    """Raise :class:`NotImplementedInAdapter` naming what ``task`` needs that is not here."""
    if task.domain not in DOMAINS:
        raise NotImplementedInAdapter(f"tau2 domain {task.domain!r}: its tools are not implemented by this adapter "
                                      f"(implemented: {', '.join(DOMAINS)})")
    unscored = [r for r in task.reward_basis if r not in SCORED_REWARD_TYPES
                and not (r == "NL_ASSERTION" and not _nl_assertions(task))]
    if unscored and task.criteria is not None:
        raise NotImplementedInAdapter(f"tau2 task {task.label}: reward component {', '.join(unscored)} is not "
                                      "implemented (NL_ASSERTION needs an LLM judge)")
    declared = DOMAINS[task.domain][1]
    missing = sorted({a.name for a in task.actions if a.requestor == "assistant" and a.name not in declared})
    if missing:
        raise NotImplementedInAdapter(f"tau2 task {task.label}: tool {', '.join(missing)} is not implemented by this "
                                      f"adapter (the {task.domain} tools implemented: {', '.join(declared)})")
    user_side = USER_SIDES.get(task.domain)
    if any(a.requestor == "user" for a in task.actions):
        if user_side is None:
            raise NotImplementedInAdapter(f"tau2 task {task.label}: user-side actions (dual-control tools) are not "
                                          f"implemented for the {task.domain} domain (its user has no tools here)")
        missing = sorted({a.name for a in task.actions if a.requestor == "user" and a.name not in user_side.declared})
        if missing:
            raise NotImplementedInAdapter(f"tau2 task {task.label}: user tool {', '.join(missing)} is not implemented "
                                          f"by this adapter")
    for where, call in _env_calls(task):
        if not isinstance(call, dict) or not isinstance(call.get("func_name"), str):
            raise Tau2DataError(f"tau2 task {task.label}: {where} must be an object with a func_name")
        side = call.get("env_type", "assistant")
        if side not in ("assistant", "user"):
            raise Tau2DataError(f"tau2 task {task.label}: {where}: env_type must be 'assistant' or 'user', got {side!r}")
        if call["func_name"] not in _side_functions(task.domain, side):
            raise NotImplementedInAdapter(f"tau2 task {task.label}: {where}: the {side}-side function "
                                          f"{call['func_name']!r} is not implemented by this adapter (domain "
                                          f"{task.domain})")
    state = task.initial_state or {}
    data = state.get("initialization_data") or {}
    if state.get("message_history"):
        raise NotImplementedInAdapter(f"tau2 task {task.label}: an initial message history is not implemented")
    if data.get("user_data") and user_side is None:
        raise NotImplementedInAdapter(f"tau2 task {task.label}: initial user data is not implemented for the "
                                      f"{task.domain} domain (its user has no tools here)")


@dataclass
class _World:
    """One episode's state: the agent's database and tools and, in a dual-control domain,
    the user's database and tools, kept in step by the domain's sync."""

    domain: str
    db: dict[str, Any]
    tools: Any
    user_db: dict[str, Any] | None = None
    user_tools: Any = None

    def sync(self) -> None:
        if self.user_tools is not None:
            USER_SIDES[self.domain].sync(self.tools, self.user_tools)

    def side(self, requestor: str) -> tuple[Any, dict[str, Any]]:
        """The tools and declarations a requestor (``assistant`` or ``user``) calls."""
        if requestor == "user":
            return self.user_tools, USER_SIDES[self.domain].declared
        return self.tools, DOMAINS[self.domain][1]

    def call(self, task: Tau2Task, where: str, spec: dict[str, Any]) -> Any:
        """An environment function call of the task file (the benchmark's
        ``run_env_function_call``: the function by name, its arguments as given, then a sync)."""
        tools = self.user_tools if spec.get("env_type", "assistant") == "user" else self.tools
        name = spec["func_name"]
        try:
            result = getattr(tools, name)(**dict(spec.get("arguments") or {}))
        except (TypeError, ValueError, KeyError) as exc:
            raise Tau2DataError(f"tau2 task {task.label}: {where} {name} failed: {exc}") from None
        self.sync()
        return result


def make_world(task: Tau2Task, base: dict[str, Any], base_user: dict[str, Any] | None = None) -> _World:
    """Fresh copies of the domain's databases with the task's initial state applied: its
    ``initialization_data`` (agent and user data merged in), then its
    ``initialization_actions`` in order, each followed by the sync (an assertion among them,
    one with an ``assert_value``, must hold), then a last sync."""
    check_supported(task)
    db = copy.deepcopy(base)
    state = task.initial_state or {}
    data = state.get("initialization_data") or {}
    if data.get("agent_data"):
        _deep_update(db, data["agent_data"])
    world = _World(task.domain, db, DOMAINS[task.domain][0](db))
    side = USER_SIDES.get(task.domain)
    if side is not None:
        world.user_db = copy.deepcopy(base_user) if base_user is not None else side.default_db()
        if data.get("user_data"):
            _deep_update(world.user_db, data["user_data"])
        world.user_tools = side.tools(world.user_db)
    for k, spec in enumerate(state.get("initialization_actions") or []):
        result = world.call(task, f"initialization action {k}", spec)
        if "assert_value" in spec and result != spec["assert_value"]:
            raise Tau2DataError(f"tau2 task {task.label}: initialization action {k} {spec['func_name']} does not hold")
    world.sync()
    return world


def initial_db(task: Tau2Task, base: dict[str, Any]) -> dict[str, Any]:
    """A fresh copy of the domain database with the task's initial state applied."""
    return make_world(task, base).db


# -- the environment ------------------------------------------------------------------------------


@dataclass
class _Episode:
    world: _World
    user: SimulatedUser
    calls: list[ToolCall] = field(default_factory=list)
    agent_texts: list[str] = field(default_factory=list)
    errors: int = 0
    user_tool_rounds: int = 0
    done: bool = False
    premature: bool = False

    @property
    def db(self) -> dict[str, Any]:
        return self.world.db

    @property
    def tools(self) -> Any:
        return self.world.tools


_TAG_RE = re.compile(r"<tool_call>.*?</tool_call>", re.DOTALL)


class Tau2Env:
    """One tau2-bench task as a reference-format environment (see the module docstring)."""

    def __init__(self, task: Tau2Task, base_db: dict[str, Any], policy: str, user_backend: Any,
                 base_user_db: dict[str, Any] | None = None) -> None:
        check_supported(task)
        self.task = task
        self.base_db = base_db
        self.base_user_db = base_user_db
        self.policy = policy
        self.user_backend = user_backend
        self.declared = DOMAINS[task.domain][1]
        self.user_side = USER_SIDES.get(task.domain)
        self._ep: _Episode | None = None

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        world = make_world(self.task, self.base_db, self.base_user_db)
        guidelines = USER_TOOL_GUIDELINES if self.user_side is not None else USER_GUIDELINES
        tools = list(self.user_side.declared.values()) if self.user_side is not None else None
        user = SimulatedUser(self.user_backend, f"{guidelines}\n\n<scenario>\n{self.task.instructions}\n</scenario>",
                             tools=tools)
        self._ep = _Episode(world, user)
        first = self._user_turn(AGENT_GREETING)
        intro = (
            "You are a customer-service agent. Follow the policy below; act only through the tools.\n\n"
            f"<policy>\n{self.policy}\n</policy>\n\n"
            f"Tools (OpenAI format): {json.dumps(self.get_tool_schemas(), ensure_ascii=False)}\n"
            'Call tools with <tool_call>{"name": "<tool>", "arguments": {...}}</tool_call> (several per message run '
            "in order, and their results come back to you); a message without a tool call is said to the user. "
            f"You opened the conversation with: {AGENT_GREETING!r}"
        )
        if first is None:
            self._ep.done = self._ep.premature = True
            first = ""
        elif self._user_stopped(first):
            self._ep.done = True
        return f"{intro}\n\nUser: {first}", {"task": self.task.label}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        ep = self._require()
        if ep.done:
            return "The conversation is over.", self._final(premature=ep.premature), True, False, {}
        text = action if isinstance(action, str) else str(action)
        said = _TAG_RE.sub("", text).strip()
        if said:
            ep.agent_texts.append(said)
        try:
            calls = parse_tool_action(text).calls
        except ActionFormatError as exc:
            ep.errors += 1
            if ep.errors >= MAX_ERRORS:
                return self._end(premature=True)
            return f"Could not parse your tool call ({exc}).", 0.0, False, False, {}
        if calls:
            parts = []
            for call in calls:
                ep.calls.append(ToolCall(call.name, copy.deepcopy(call.arguments)))
                result, failed = _run(ep.tools, call.name, dict(call.arguments), self.declared)
                ep.world.sync()
                ep.errors += failed
                parts.append(f"<tool_response>{json.dumps({'name': call.name, 'content': result}, ensure_ascii=False)}"
                             "</tool_response>")
            if ep.errors >= MAX_ERRORS:
                return self._end(premature=True)
            return "\n".join(parts), 0.0, False, False, {}
        if STOP in text:
            return self._end(premature=False)
        reply = self._user_turn(said or text)
        if reply is None:
            return self._end(premature=True)
        if self._user_stopped(reply):
            return self._end(premature=False)
        return f"User: {reply}", 0.0, False, False, {}

    def close(self) -> None:
        self._ep = None

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return list(self.declared.values())

    def _user_turn(self, agent_text: str) -> str | None:
        """The user's next message to the agent. A dual-control user may first call its tools
        (run on its side of the world, each followed by the sync, the results handed back to
        it and never shown to the agent); their failures count toward :data:`MAX_ERRORS` with
        the agent's, as the benchmark counts them. ``None``: the episode ends prematurely (too
        many errors, or :data:`MAX_USER_TOOL_ROUNDS`)."""
        ep = self._require()
        turn = ep.user.respond(agent_text)
        while turn.tool_calls:
            ep.user_tool_rounds += 1
            results = [(c.id, self._run_user_call(c)) for c in turn.tool_calls]
            if ep.errors >= MAX_ERRORS or ep.user_tool_rounds >= MAX_USER_TOOL_ROUNDS:
                return None
            turn = ep.user.tool_results(results)
        return turn.text

    def _run_user_call(self, call: UserToolCall) -> str:
        ep = self._require()
        if call.arguments is None:
            ep.errors += 1
            return f"Error: the arguments of {call.name} are not a JSON object: {call.raw_arguments[:200]}"
        ep.calls.append(ToolCall(call.name, copy.deepcopy(call.arguments)))
        tools, declared = ep.world.side("user")
        result, failed = _run(tools, call.name, dict(call.arguments), declared)
        ep.world.sync()
        ep.errors += failed
        return result

    # -- scoring -----------------------------------------------------------------------

    @staticmethod
    def _user_stopped(text: str) -> bool:
        return any(token in text for token in (STOP, TRANSFER, OUT_OF_SCOPE))

    def _require(self) -> _Episode:
        if self._ep is None:
            raise RuntimeError(f"tau2 task {self.task.label}: step() called before reset()")
        return self._ep

    def _end(self, *, premature: bool) -> tuple[str, float, bool, bool, dict[str, Any]]:
        ep = self._require()
        ep.done = True
        ep.premature = premature
        reward, breakdown = self.score(premature=premature)
        return "The conversation is over.", reward, True, False, {"reward_breakdown": breakdown}

    def _final(self, *, premature: bool) -> float:
        return self.score(premature=premature)[0]

    def _assertion_holds(self, spec: dict[str, Any]) -> bool:
        """One of the task's env assertions on this episode's world (the benchmark's
        ``run_env_assertion``): the function's answer equals ``assert_value`` (default
        true); a function that fails or answers no boolean does not hold."""
        ep = self._require()
        try:
            result = ep.world.call(self.task, "env assertion", spec)
        except Tau2DataError:
            return False
        return isinstance(result, bool) and result == spec.get("assert_value", True)

    def score(self, *, premature: bool = False) -> tuple[float, dict[str, float]]:
        """The task's reward and its components (the benchmark's evaluation type ``all``)."""
        ep = self._require()
        if premature:
            return 0.0, {}
        if self.task.criteria is None:
            return 1.0, {}
        parts: dict[str, float] = {}
        basis = set(self.task.reward_basis)
        if "DB" in basis:
            expected_actions = self.task.criteria.get("actions")
            if expected_actions is None and self.task.criteria.get("env_assertions") is None:
                parts["DB"] = 1.0
            else:
                # the expected actions replayed on a fresh world, each by its requestor; errors
                # ignored and no sync between them, as the benchmark's replay does
                gold = make_world(self.task, self.base_db, self.base_user_db)
                for a in self.task.actions:
                    tools, declared = gold.side(a.requestor)
                    _run(tools, a.name, copy.deepcopy(a.arguments), declared)
                same = _canonical(gold.db) == _canonical(ep.world.db)
                if gold.user_db is not None and ep.world.user_db is not None:
                    same = same and _canonical(gold.user_db) == _canonical(ep.world.user_db)
                parts["DB"] = float(same)
        if "ENV_ASSERTION" in basis:
            held = [self._assertion_holds(a) for a in self.task.criteria.get("env_assertions") or []]
            parts["ENV_ASSERTION"] = float(all(held))
        if "ACTION" in basis:
            parts["ACTION"] = float(all(any(a.matches(c) for c in ep.calls) for a in self.task.actions))
        if "COMMUNICATE" in basis:
            infos = self.task.criteria.get("communicate_info") or []
            said = [t.lower().replace(",", "") for t in ep.agent_texts]
            parts["COMMUNICATE"] = float(all(any(i.lower() in s for s in said) for i in infos))
        if "NL_ASSERTION" in basis and not _nl_assertions(self.task):  # with assertions: unavailable
            parts["NL_ASSERTION"] = 1.0
        return math.prod(parts.values()), parts


# -- pass^k ---------------------------------------------------------------------------------------


def pass_hat_k(num_trials: int, successes: int, k: int) -> float:
    """tau-bench's pass^k of one task: C(successes, k) / C(num_trials, k)."""
    if not 1 <= k <= num_trials or not 0 <= successes <= num_trials:
        raise ValueError(f"pass^k needs 1 <= k <= trials and 0 <= successes <= trials (k={k}, trials={num_trials}, "
                         f"successes={successes})")
    return math.comb(successes, k) / math.comb(num_trials, k)


def pass_hat_ks(episodes: Sequence[Any]) -> dict[str, dict[int, float]]:
    """Per domain, pass^k for k = 1 .. the fewest trials of any of its tasks: the mean over
    tasks of :func:`pass_hat_k`. ``episodes`` are the harness's per-episode rows (``group``:
    ``domain/task``, ``success``); episodes that failed before their first turn (the task is
    unavailable) are left out, as the benchmark leaves out infrastructure errors."""
    per_task: dict[str, list[bool]] = {}
    for e in episodes:
        if e.error is not None and e.turns == 0:
            continue
        per_task.setdefault(e.group, []).append(bool(e.success))
    by_domain: dict[str, dict[str, list[bool]]] = {}
    for group, trials in per_task.items():
        by_domain.setdefault(group.split("/", 1)[0], {})[group] = trials
    out: dict[str, dict[int, float]] = {}
    for domain, tasks in sorted(by_domain.items()):
        max_k = min(len(t) for t in tasks.values())
        out[domain] = {k: sum(pass_hat_k(len(t), sum(t), k) for t in tasks.values()) / len(tasks)
                       for k in range(1, max_k + 1)}
    return out


# -- the suite ------------------------------------------------------------------------------------


def _names(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, int) and not isinstance(value, bool):  # -o ids=5 arrives as a JSON number
        value = str(value)
    if isinstance(value, str):
        return [v for v in value.replace(",", " ").split() if v]
    return [str(v) for v in value]


def _plain(value: Any) -> Any:
    """A TOML value as JSON would hold it (dates and times as ISO strings)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return value


def _read_data(folder: Path, stem: str, *, required: bool) -> dict[str, Any] | None:
    """``{stem}.json``, else ``{stem}.toml`` (the benchmark's telecom databases are TOML)."""
    path = folder / f"{stem}.json"
    if path.is_file():
        data = read_json(path, Tau2DataError)
    elif (folder / f"{stem}.toml").is_file():
        path = folder / f"{stem}.toml"
        try:
            data = _plain(tomllib.loads(path.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise Tau2DataError(f"{path}: not TOML ({exc})") from None
    elif required:
        raise Tau2DataError(f"{folder}: no {stem}.json or {stem}.toml")
    else:
        return None
    if not isinstance(data, dict):
        raise Tau2DataError(f"{path}: must hold an object")
    return data


def _read_policy(folder: Path) -> str:
    """``policy.md``; else the telecom layout's ``main_policy.md`` with its
    ``tech_support_manual.md``, joined as the benchmark joins them; else no policy."""
    if (folder / "policy.md").is_file():
        return (folder / "policy.md").read_text(encoding="utf-8")
    if not (folder / "main_policy.md").is_file():
        return ""
    text = f"<main_policy>\n{(folder / 'main_policy.md').read_text(encoding='utf-8')}\n</main_policy>"
    manual = folder / "tech_support_manual.md"
    if manual.is_file():
        text += f"\n<tech_support_policy>\n{manual.read_text(encoding='utf-8')}\n</tech_support_policy>"
    return text


def read_domain(folder: Path, domain: str) -> dict[str, Any]:
    """A domain folder's database (``db``), user database (``user_db``: the default one of
    a dual-control domain with ``user_db.json``/``.toml`` merged in, else ``None``) and
    policy (``policy``), each checked."""
    db = _read_data(folder, "db", required=True)
    assert db is not None
    DOMAINS[domain][0](db)  # checks the top-level fields
    user_db = None
    side = USER_SIDES.get(domain)
    if side is not None:
        user_db = side.default_db()
        extra = _read_data(folder, "user_db", required=False)
        if extra:
            _deep_update(user_db, extra)
        side.tools(user_db)
    return {"db": db, "user_db": user_db, "policy": _read_policy(folder)}


def _split(folder: Path, name: str) -> set[str]:
    """The task ids of split ``name`` in the domain's ``split_tasks.json`` (the benchmark's
    named task subsets, such as telecom's ``base``)."""
    path = folder / "split_tasks.json"
    splits = read_json(path, Tau2DataError)
    if not isinstance(splits, dict) or not all(isinstance(v, list) for v in splits.values()):
        raise Tau2DataError(f"{path}: must hold an object of split name -> list of task ids")
    if name not in splits:
        raise Tau2DataError(f"{path}: no split {name!r} (splits: {', '.join(splits) or 'none'})")
    return {str(i) for i in splits[name]}


def tau2_items(context: SuiteContext, *, size: int = 1, seed: int = 0, data: str | Path | None = None,
               domains: Any = None, ids: Any = None, user: Any = None, split: Any = None) -> Sequence[EvalItem]:
    """``size`` trials of each task of each chosen domain (default: every domain folder)."""
    if data is None:
        raise Tau2DataError("suite tau2_bench reads tau2-bench's data: give -o data=FOLDER (its data/tau2/domains, "
                            "or one domain folder with tasks.json, db.json and policy.md)")
    if size < 1:
        raise Tau2DataError(f"size (trials per task) must be at least 1, got {size}")
    backend = resolve_user_backend(user, getattr(context, "plugins", None), suite="tau2_bench")
    wanted = set(_names(ids))
    items: list[EvalItem] = []
    for folder in domain_folders(Path(data), _names(domains)):
        tasks = load_domain(folder)
        if split is not None:
            chosen = _split(folder, str(split))
            tasks = [t for t in tasks if t.id in chosen]
        if wanted:
            tasks = [t for t in tasks if t.id in wanted or t.label in wanted]
        shared: dict[str, Any] = {}

        def make(task: Tau2Task, folder: Path = folder, shared: dict[str, Any] = shared) -> Tau2Env:
            check_supported(task)
            if "db" not in shared:  # read once per domain, on the first episode that needs it
                shared.update(read_domain(folder, task.domain))
            return Tau2Env(task, shared["db"], shared["policy"], backend, base_user_db=shared["user_db"])

        for task in tasks:
            for k in range(size):
                items.append(EvalItem(group=task.label, seed=seed + k, label=task.label, max_turns=MAX_AGENT_TURNS,
                                      column=f"tau2-{task.domain}", make_env=lambda task=task, make=make: make(task)))
    if wanted:
        found = {i.label for i in items} | {i.label.split("/", 1)[1] for i in items}
        missing = sorted(wanted - found)
        if missing:
            raise Tau2DataError(f"{data}: no task {', '.join(missing)}")
    if not items:
        raise Tau2DataError(f"{data}: no task to evaluate")
    return items


SUITE = EpisodeSuite(
    name="tau2_bench",
    description="tau2-bench (adapter on the published format; the package is not installable here): each task a "
                "conversation with a simulated user (-o user=openai:URL#MODEL), tools on an in-memory copy of the "
                "domain database (retail, airline and telecom implemented, telecom's user acting on its phone "
                "through tools of its own; other domains, retail's three missing tools and NL assertions named as "
                "unavailable), scored by DB, ENV_ASSERTION, ACTION and COMMUNICATE as the benchmark does; --size "
                "trials per task (pass^k).",
    items=tau2_items,
    trusted=True,
    options={"data": "tau2-bench's data/tau2/domains folder, or one domain folder (tasks.json, db.json or db.toml, "
                     "policy.md or main_policy.md + tech_support_manual.md)",
             "domains": "comma-separated domain folders (default: all found)",
             "ids": "comma-separated task ids (or domain/id) instead of every task",
             "split": "a task split of each domain's split_tasks.json (such as telecom's base)",
             "user": "the simulated user's model: openai:BASE_URL#MODEL"},
    defaults={"size": 1, "temperature": 0.0, "max_new_tokens": 1024},
)
