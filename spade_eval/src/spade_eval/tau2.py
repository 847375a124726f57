r"""tau2-bench as an episode suite of ``spade eval`` (``--suite tau2_bench``).

tau2-bench's own package cannot be installed here (it is not on the package registry; the
registry's ``tau2`` is an unrelated library), so this is an adapter written against the
benchmark's published formats and scoring rules, not its code:

* **Data** (``-o data=FOLDER``): tau2-bench's ``data/tau2/domains`` layout, a folder per
  domain holding ``tasks.json`` (a list of tasks: ``id``, ``user_scenario.instructions``,
  ``initial_state``, ``evaluation_criteria`` with ``actions`` (name + arguments),
  ``communicate_info``, ``env_assertions``, ``nl_assertions``, ``reward_basis``), the
  domain's database ``db.json`` and its ``policy.md``; or one such domain folder.
* **A conversation** (half duplex, as the benchmark plays it): the agent is taken to open
  with "Hi! How can I help you today?"; the simulated user (``-o user=openai:URL#MODEL``)
  answers from the task's scenario; each agent message either calls tools (``<tool_call>``
  tags, run in order on this episode's in-memory copy of the domain database, results
  returned) or speaks to the user, who replies. The episode ends when the user's message
  holds ``###STOP###``, ``###TRANSFER###`` or ``###OUT-OF-SCOPE###``, or the agent's holds
  ``###STOP###``; after :data:`MAX_ERRORS` failed tool calls or the turn limit it ends
  prematurely and scores 0, as the benchmark's ``too many errors``/``max steps`` do.
* **Score** (the benchmark's ``evaluate_simulation``, evaluation type ``all``): the
  product of the components in the task's ``reward_basis``: ``DB`` (the database after the
  conversation equals the one the task's ``actions`` produce when replayed on a fresh
  copy), ``COMMUNICATE`` (every ``communicate_info`` string appears, case-insensitively,
  in an agent message with commas removed), ``ACTION`` (every expected action is matched by
  an agent call of that name whose arguments, all or the action's ``compare_args``, are
  equal). A reward of 1 is a success; a domain's column is pass^1 (the mean over tasks of
  each task's share of successful trials); :func:`pass_hat_k` gives pass^k over the
  ``--size`` trials per task.

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
fields ignored). Ids are matched exactly (later benchmark versions also accept a differently
cased id, for their voice mode). **Not implemented**, each reported by name (the task's
episodes fail with the reason and its column lists them as unavailable): the other domains
(``telecom``, ...), the tools in :data:`NOT_IMPLEMENTED` (retail's
:data:`RETAIL_NOT_IMPLEMENTED`; none of airline's), the ``NL_ASSERTION`` (an LLM judge) and
``ENV_ASSERTION`` reward components, and an initial state carrying a message history or user
data.
"""

from __future__ import annotations

import ast
import copy
import json
import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade_core.actions import ToolCall, parse_tool_action
from spade_core.errors import ActionFormatError
from spade_core.evaluation import EpisodeSuite, EvalItem, SuiteContext

from .dialogue import BenchmarkDataError, SimulatedUser, read_json, resolve_user_backend

AGENT_GREETING = "Hi! How can I help you today?"
STOP, TRANSFER, OUT_OF_SCOPE = "###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"
#: Failed tool calls after which the episode ends prematurely (the benchmark's default).
MAX_ERRORS = 10
#: Agent messages per episode before it is cut off (the harness's turn limit).
MAX_AGENT_TURNS = 60
REWARD_TYPES = ("DB", "ENV_ASSERTION", "NL_ASSERTION", "ACTION", "COMMUNICATE")
SCORED_REWARD_TYPES = ("DB", "ACTION", "COMMUNICATE")

USER_GUIDELINES = """You play a customer talking to a customer-service agent, following the scenario below.
- Write only the customer's next message, one short message at a time, in your own words.
- Give the agent information only when it is needed; never invent what the scenario does not say.
- Follow the scenario's instructions about what to accept, refuse or insist on.
- When your request is fully handled, or the conversation cannot go further, reply with ###STOP###.
- If you are transferred to a human agent, reply with ###TRANSFER###; if the scenario does not say
  how to answer something essential, reply with ###OUT-OF-SCOPE###."""


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


def _fn(name: str, description: str, **params: tuple[str | dict[str, Any], str]) -> dict[str, Any]:
    """An OpenAI-format declaration; a parameter's kind is a JSON type name, ``array`` (of
    strings) or a JSON schema of its own; every parameter is required."""
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
                                                            "required": list(props)}}}


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


def _conform(schema: dict[str, Any], value: Any, where: str) -> Any:
    """``value`` checked against a declaration's parameter schema and converted as the
    benchmark's argument models convert it: integers leniently, strings and enumerations
    strictly, objects reduced to their declared fields (others ignored), a missing required
    field an error. Raises :class:`ValueError` naming the argument."""
    if "enum" in schema:
        if not isinstance(value, str) or value not in schema["enum"]:
            raise ValueError(f"{where}: must be one of {', '.join(map(repr, schema['enum']))}, got {value!r}")
        return value
    kind = schema.get("type")
    if kind == "string":
        if not isinstance(value, str):
            raise ValueError(f"{where}: must be a string, got {type(value).__name__}")
        return value
    if kind == "integer":
        return _lax_int(value, where)
    if kind == "array":
        if not isinstance(value, list):
            raise ValueError(f"{where}: must be an array, got {type(value).__name__}")
        return [_conform(schema.get("items", {}), v, f"{where}[{i}]") for i, v in enumerate(value)]
    if kind == "object":
        if not isinstance(value, dict):
            raise ValueError(f"{where}: must be an object, got {type(value).__name__}")
        out: dict[str, Any] = {}
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                out[key] = _conform(sub, value[key], f"{where}.{key}" if where else key)
            elif key in schema.get("required", ()):
                raise ValueError(f"{where + '.' if where else ''}{key}: field required")
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

#: Domains whose tools are implemented.
DOMAINS: dict[str, tuple[type, dict[str, dict[str, Any]]]] = {"retail": (RetailTools, RETAIL_TOOLS),
                                                               "airline": (AirlineTools, AIRLINE_TOOLS)}
#: Per implemented domain, the benchmark's tools of that domain this adapter lacks.
NOT_IMPLEMENTED: dict[str, tuple[str, ...]] = {"retail": RETAIL_NOT_IMPLEMENTED, "airline": AIRLINE_NOT_IMPLEMENTED}


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


def check_supported(task: Tau2Task) -> None:
    """Raise :class:`NotImplementedInAdapter` naming what ``task`` needs that is not here."""
    if task.domain not in DOMAINS:
        raise NotImplementedInAdapter(f"tau2 domain {task.domain!r}: its tools are not implemented by this adapter "
                                      f"(implemented: {', '.join(DOMAINS)})")
    unscored = [r for r in task.reward_basis if r not in SCORED_REWARD_TYPES]
    if unscored and task.criteria is not None:
        raise NotImplementedInAdapter(f"tau2 task {task.label}: reward component {', '.join(unscored)} is not "
                                      "implemented (NL_ASSERTION needs an LLM judge; ENV_ASSERTION the domain's "
                                      "assertion functions)")
    declared = DOMAINS[task.domain][1]
    missing = sorted({a.name for a in task.actions if a.name not in declared})
    if missing:
        raise NotImplementedInAdapter(f"tau2 task {task.label}: tool {', '.join(missing)} is not implemented by this "
                                      f"adapter (the {task.domain} tools implemented: {', '.join(declared)})")
    if any(a.requestor != "assistant" for a in task.actions):
        raise NotImplementedInAdapter(f"tau2 task {task.label}: user-side actions (dual-control tools) are not implemented")
    state = task.initial_state or {}
    data = state.get("initialization_data") or {}
    if state.get("message_history") or data.get("user_data"):
        raise NotImplementedInAdapter(f"tau2 task {task.label}: an initial message history or user data is not implemented")


def initial_db(task: Tau2Task, base: dict[str, Any]) -> dict[str, Any]:
    """A fresh copy of the domain database with the task's initial state applied."""
    db = copy.deepcopy(base)
    state = task.initial_state or {}
    data = state.get("initialization_data") or {}
    if data.get("agent_data"):
        _deep_update(db, data["agent_data"])
    tools_cls, declared = DOMAINS[task.domain]
    tools = tools_cls(db)
    for k, act in enumerate(state.get("initialization_actions") or []):
        if not isinstance(act, dict) or act.get("env_type", "assistant") != "assistant":
            raise NotImplementedInAdapter(f"tau2 task {task.label}: initialization action {k} is not an agent-side call")
        _run(tools, str(act.get("func_name")), dict(act.get("arguments") or {}), declared)
    return db


# -- the environment ------------------------------------------------------------------------------


@dataclass
class _Episode:
    db: dict[str, Any]
    tools: Any
    user: SimulatedUser
    calls: list[ToolCall] = field(default_factory=list)
    agent_texts: list[str] = field(default_factory=list)
    errors: int = 0
    done: bool = False


_TAG_RE = re.compile(r"<tool_call>.*?</tool_call>", re.DOTALL)


class Tau2Env:
    """One tau2-bench task as a reference-format environment (see the module docstring)."""

    def __init__(self, task: Tau2Task, base_db: dict[str, Any], policy: str, user_backend: Any) -> None:
        check_supported(task)
        self.task = task
        self.base_db = base_db
        self.policy = policy
        self.user_backend = user_backend
        self.declared = DOMAINS[task.domain][1]
        self._ep: _Episode | None = None

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        db = initial_db(self.task, self.base_db)
        user = SimulatedUser(self.user_backend, f"{USER_GUIDELINES}\n\n<scenario>\n{self.task.instructions}\n</scenario>")
        self._ep = _Episode(db, DOMAINS[self.task.domain][0](db), user)
        first = user.reply(AGENT_GREETING)
        intro = (
            "You are a customer-service agent. Follow the policy below; act only through the tools.\n\n"
            f"<policy>\n{self.policy}\n</policy>\n\n"
            f"Tools (OpenAI format): {json.dumps(self.get_tool_schemas(), ensure_ascii=False)}\n"
            'Call tools with <tool_call>{"name": "<tool>", "arguments": {...}}</tool_call> (several per message run '
            "in order, and their results come back to you); a message without a tool call is said to the user. "
            f"You opened the conversation with: {AGENT_GREETING!r}"
        )
        if self._user_stopped(first):
            self._ep.done = True
        return f"{intro}\n\nUser: {first}", {"task": self.task.label}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        ep = self._require()
        if ep.done:
            return "The conversation is over.", self._final(premature=False), True, False, {}
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
                ep.errors += failed
                parts.append(f"<tool_response>{json.dumps({'name': call.name, 'content': result}, ensure_ascii=False)}"
                             "</tool_response>")
            if ep.errors >= MAX_ERRORS:
                return self._end(premature=True)
            return "\n".join(parts), 0.0, False, False, {}
        if STOP in text:
            return self._end(premature=False)
        reply = ep.user.reply(said or text)
        if self._user_stopped(reply):
            return self._end(premature=False)
        return f"User: {reply}", 0.0, False, False, {}

    def close(self) -> None:
        self._ep = None

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return list(self.declared.values())

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
        reward, breakdown = self.score(premature=premature)
        return "The conversation is over.", reward, True, False, {"reward_breakdown": breakdown}

    def _final(self, *, premature: bool) -> float:
        return self.score(premature=premature)[0]

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
                gold = initial_db(self.task, self.base_db)
                gold_tools = DOMAINS[self.task.domain][0](gold)
                for a in self.task.actions:
                    _run(gold_tools, a.name, copy.deepcopy(a.arguments), self.declared)  # errors ignored, as there
                parts["DB"] = float(_canonical(gold) == _canonical(ep.db))
        if "ACTION" in basis:
            parts["ACTION"] = float(all(any(a.matches(c) for c in ep.calls) for a in self.task.actions))
        if "COMMUNICATE" in basis:
            infos = self.task.criteria.get("communicate_info") or []
            said = [t.lower().replace(",", "") for t in ep.agent_texts]
            parts["COMMUNICATE"] = float(all(any(i.lower() in s for s in said) for i in infos))
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


def tau2_items(context: SuiteContext, *, size: int = 1, seed: int = 0, data: str | Path | None = None,
               domains: Any = None, ids: Any = None, user: Any = None) -> Sequence[EvalItem]:
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
        if wanted:
            tasks = [t for t in tasks if t.id in wanted or t.label in wanted]
        shared: dict[str, Any] = {}

        def make(task: Tau2Task, folder: Path = folder, shared: dict[str, Any] = shared) -> Tau2Env:
            check_supported(task)
            if "db" not in shared:  # read once per domain, on the first episode that needs it
                db = read_json(folder / "db.json", Tau2DataError)
                if not isinstance(db, dict):
                    raise Tau2DataError(f"{folder / 'db.json'}: must hold an object")
                DOMAINS[task.domain][0](db)  # checks the top-level fields
                shared["db"] = db
                policy = folder / "policy.md"
                shared["policy"] = policy.read_text(encoding="utf-8") if policy.is_file() else ""
            return Tau2Env(task, shared["db"], shared["policy"], backend)

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
                "domain database (retail and airline implemented; telecom and other domains, retail's three missing "
                "tools, NL/ENV assertions named as unavailable), "
                "scored by DB, ACTION and COMMUNICATE as the benchmark does; --size trials per task (pass^k).",
    items=tau2_items,
    trusted=True,
    options={"data": "tau2-bench's data/tau2/domains folder, or one domain folder (tasks.json, db.json, policy.md)",
             "domains": "comma-separated domain folders (default: all found)",
             "ids": "comma-separated task ids (or domain/id) instead of every task",
             "user": "the simulated user's model: openai:BASE_URL#MODEL"},
    defaults={"size": 1, "temperature": 0.0, "max_new_tokens": 1024},
)
