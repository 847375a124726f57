"""The retail tools that change an order's items or payment (``exchange_delivered_order_items``,
``modify_pending_order_items``, ``modify_pending_order_payment``): what each leaves in the
database, each refusal (with nothing changed), and tasks written here in the benchmark's
format that use them, scored through the harness (both models the replay backend)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from spade_core.actions import ToolCall, format_tool_calls

from spade_eval import tau2

from .tau2_scripts import play_scripts, write_domain

LAMP, MUG = "3000001", "3000002"
RED, BLUE, GREEN, WHITE, GOLD = "3100011", "3100012", "3100013", "3100014", "3100015"
LARGE, SMALL = "3200021", "3200022"
ADDRESS = {"address1": "1 Elm St", "address2": "", "city": "Springfield", "state": "IL", "country": "USA",
           "zip": "62701"}
VARIANTS = {RED: (LAMP, "Desk Lamp", {"color": "red"}, 30.0, True),
            BLUE: (LAMP, "Desk Lamp", {"color": "blue"}, 35.0, True),
            GREEN: (LAMP, "Desk Lamp", {"color": "green"}, 28.0, False),
            WHITE: (LAMP, "Desk Lamp", {"color": "white"}, 52.5, True),
            GOLD: (LAMP, "Desk Lamp", {"color": "gold"}, 65.0, True),
            LARGE: (MUG, "Mug", {"size": "large"}, 10.0, True),
            SMALL: (MUG, "Mug", {"size": "small"}, 8.25, True)}


def item(item_id: str) -> dict:
    product_id, name, options, price, _ = VARIANTS[item_id]
    return {"name": name, "product_id": product_id, "item_id": item_id, "price": price, "options": options}


def order(order_id: str, status: str, items: list[str], *payments: tuple[float, str]) -> dict:
    return {"order_id": order_id, "user_id": "ana_lee_1001", "status": status, "address": ADDRESS,
            "items": [item(i) for i in items], "fulfillments": [],
            "payment_history": [{"transaction_type": "payment", "amount": amount, "payment_method_id": method}
                                for amount, method in payments]}


GIFT, CARD, PAYPAL = "gift_card_5501", "credit_card_7702", "paypal_3303"
DB = {
    "users": {"ana_lee_1001": {
        "user_id": "ana_lee_1001", "name": {"first_name": "Ana", "last_name": "Lee"}, "address": ADDRESS,
        "email": "ana.lee@example.com",
        "payment_methods": {GIFT: {"source": "gift_card", "id": GIFT, "balance": 20.0},
                            CARD: {"source": "credit_card", "id": CARD, "brand": "visa", "last_four": "4242"},
                            PAYPAL: {"source": "paypal", "id": PAYPAL}},
        "orders": ["#W2001", "#W2002", "#W2003", "#W2004", "#W2005", "#W2006"]}},
    "orders": {
        "#W2001": order("#W2001", "pending", [RED, LARGE], (40.0, CARD)),
        "#W2002": order("#W2002", "delivered", [BLUE, LARGE], (45.0, CARD)),
        "#W2003": order("#W2003", "pending", [LARGE, LARGE], (20.0, PAYPAL)),
        "#W2004": order("#W2004", "pending (item modified)", [WHITE], (30.0, CARD), (22.5, CARD)),
        "#W2005": order("#W2005", "pending", [LARGE], (10.0, GIFT)),
        "#W2006": order("#W2006", "processed", [LARGE], (10.0, CARD))},
    "products": {product_id: {"name": name, "product_id": product_id, "variants": {
        i: {"item_id": i, "options": v[2], "available": v[4], "price": v[3]} for i, v in VARIANTS.items()
        if v[0] == product_id}} for product_id, name in ((LAMP, "Desk Lamp"), (MUG, "Mug"))},
}

PUBLISHED_RETAIL_TOOLS = {
    "calculate", "cancel_pending_order", "exchange_delivered_order_items", "find_user_id_by_email",
    "find_user_id_by_name_zip", "get_item_details", "get_order_details", "get_product_details", "get_user_details",
    "list_all_product_types", "modify_pending_order_address", "modify_pending_order_items",
    "modify_pending_order_payment", "modify_user_address", "return_delivered_order_items",
    "transfer_to_human_agents"}


def tools() -> tuple[tau2.RetailTools, dict]:
    db = copy.deepcopy(DB)
    return tau2.RetailTools(db), db


def run(kit: tau2.RetailTools, name: str, **arguments) -> dict:
    text, failed = tau2.run_tool(kit, name, arguments, tau2.RETAIL_TOOLS)
    assert not failed, text
    return json.loads(text)


def balance(db: dict) -> float:
    return db["users"]["ana_lee_1001"]["payment_methods"][GIFT]["balance"]


def test_every_published_retail_tool_is_declared_and_none_is_left() -> None:
    assert set(tau2.RETAIL_TOOLS) == PUBLISHED_RETAIL_TOOLS
    assert tau2.NOT_IMPLEMENTED["retail"] == tau2.RETAIL_NOT_IMPLEMENTED == ()


# -- what each tool leaves ------------------------------------------------------------------------


def test_modifying_items_replaces_each_with_its_own_variant_and_settles_the_difference() -> None:
    kit, db = tools()
    # two products at once: each item takes its own new variant's price and options
    out = run(kit, "modify_pending_order_items", order_id="#W2001", item_ids=[RED, LARGE],
              new_item_ids=[WHITE, SMALL], payment_method_id=CARD)
    assert out["items"] == [item(WHITE), item(SMALL)] and out["status"] == "pending (item modified)"
    assert out["payment_history"][-1] == {"transaction_type": "payment", "amount": pytest.approx(20.75),
                                          "payment_method_id": CARD}
    assert db["orders"]["#W2001"] == out and balance(db) == 20.0
    # a cheaper replacement is a refund, credited at once to a gift card; a listed id counts as often as listed
    out = run(kit, "modify_pending_order_items", order_id="#W2003", item_ids=[LARGE, LARGE],
              new_item_ids=[SMALL, SMALL], payment_method_id=GIFT)
    assert out["items"] == [item(SMALL), item(SMALL)]
    assert out["payment_history"][-1] == {"transaction_type": "refund", "amount": 3.5, "payment_method_id": GIFT}
    assert balance(db) == 23.5
    # items are modified once: the order is no longer plainly pending
    text, failed = tau2.run_tool(kit, "modify_pending_order_items", {
        "order_id": "#W2003", "item_ids": [SMALL], "new_item_ids": [LARGE], "payment_method_id": GIFT},
        tau2.RETAIL_TOOLS)
    assert failed and text == "Error: Non-pending order cannot be modified"


def test_changing_the_payment_records_a_payment_and_a_refund_and_moves_gift_card_balances() -> None:
    kit, db = tools()
    out = run(kit, "modify_pending_order_payment", order_id="#W2003", payment_method_id=GIFT)
    assert out["payment_history"] == [
        {"transaction_type": "payment", "amount": 20.0, "payment_method_id": PAYPAL},
        {"transaction_type": "payment", "amount": 20.0, "payment_method_id": GIFT},
        {"transaction_type": "refund", "amount": 20.0, "payment_method_id": PAYPAL}]
    assert balance(db) == 0.0 and out["status"] == "pending"
    out = run(kit, "modify_pending_order_payment", order_id="#W2005", payment_method_id=CARD)
    assert out["payment_history"][1:] == [{"transaction_type": "payment", "amount": 10.0, "payment_method_id": CARD},
                                          {"transaction_type": "refund", "amount": 10.0, "payment_method_id": GIFT}]
    assert balance(db) == 10.0  # the refund to the old gift card is credited at once


def test_an_exchange_only_records_the_request_and_its_price_difference() -> None:
    kit, db = tools()
    out = run(kit, "exchange_delivered_order_items", order_id="#W2002", item_ids=[LARGE, BLUE],
              new_item_ids=[SMALL, WHITE], payment_method_id=GIFT)
    assert out["status"] == "exchange requested"
    assert (out["exchange_items"], out["exchange_new_items"]) == (sorted([LARGE, BLUE]), sorted([SMALL, WHITE]))
    assert out["exchange_payment_method_id"] == GIFT and out["exchange_price_difference"] == 15.75
    # nothing is charged yet: the items, the payments and the gift card stay as they were
    assert out["items"] == DB["orders"]["#W2002"]["items"]
    assert out["payment_history"] == DB["orders"]["#W2002"]["payment_history"] and balance(db) == 20.0
    # a cheaper exchange records a negative difference; the same variant is not refused, as in the benchmark
    kit, db = tools()
    assert run(kit, "exchange_delivered_order_items", order_id="#W2002", item_ids=[BLUE, LARGE],
               new_item_ids=[RED, LARGE], payment_method_id=CARD)["exchange_price_difference"] == -5.0


# -- refusals -------------------------------------------------------------------------------------

EXCHANGE = {"order_id": "#W2002", "item_ids": [BLUE], "new_item_ids": [WHITE], "payment_method_id": CARD}
MODIFY = {"order_id": "#W2001", "item_ids": [RED], "new_item_ids": [WHITE], "payment_method_id": CARD}
PAYMENT = {"order_id": "#W2003", "payment_method_id": CARD}


@pytest.mark.parametrize(("name", "arguments", "error"), [
    ("exchange_delivered_order_items", {**EXCHANGE, "order_id": "#W2001"}, "Non-delivered order cannot be exchanged"),
    ("exchange_delivered_order_items", {**EXCHANGE, "order_id": "#W9999"}, "Order not found"),
    ("exchange_delivered_order_items", {**EXCHANGE, "item_ids": [RED]}, f"Item {RED} not found in the order"),
    ("exchange_delivered_order_items", {**EXCHANGE, "item_ids": [LARGE, LARGE], "new_item_ids": [SMALL, SMALL]},
     f"Item {LARGE} not found in the order (as many times as listed)"),
    ("exchange_delivered_order_items", {**EXCHANGE, "new_item_ids": [WHITE, RED]},
     "The number of new items should match the number of items replaced"),
    ("exchange_delivered_order_items", {**EXCHANGE, "new_item_ids": [SMALL]}, "Variant not found"),
    ("exchange_delivered_order_items", {**EXCHANGE, "new_item_ids": [GREEN]}, f"New item {GREEN} not found or "
                                                                              "available"),
    ("exchange_delivered_order_items", {**EXCHANGE, "payment_method_id": "gift_card_0000"},
     "Payment method not found"),
    ("exchange_delivered_order_items", {**EXCHANGE, "new_item_ids": [GOLD], "payment_method_id": GIFT},
     "Insufficient gift card balance to pay for the price difference"),
    ("exchange_delivered_order_items", {**EXCHANGE, "item_ids": BLUE}, "item_ids: must be an array"),
    ("modify_pending_order_items", {**MODIFY, "order_id": "#W2002"}, "Non-pending order cannot be modified"),
    ("modify_pending_order_items", {**MODIFY, "order_id": "#W2004", "item_ids": [WHITE], "new_item_ids": [RED]},
     "Non-pending order cannot be modified"),
    ("modify_pending_order_items", {**MODIFY, "item_ids": [BLUE]}, f"Item {BLUE} not found in the order"),
    ("modify_pending_order_items", {**MODIFY, "new_item_ids": [RED]},
     "The new item id should be different from the old item id"),
    ("modify_pending_order_items", {**MODIFY, "new_item_ids": [GREEN]}, f"New item {GREEN} not found or available"),
    ("modify_pending_order_items", {**MODIFY, "new_item_ids": [SMALL]}, "Variant not found"),
    ("modify_pending_order_items", {**MODIFY, "new_item_ids": []},
     "The number of new items should match the number of items replaced"),
    ("modify_pending_order_items", {**MODIFY, "payment_method_id": "paypal_0000"}, "Payment method not found"),
    ("modify_pending_order_items", {**MODIFY, "new_item_ids": [GOLD], "payment_method_id": GIFT},
     "Insufficient gift card balance to pay for the new item"),
    ("modify_pending_order_items", {**MODIFY, "new_item_ids": [int(WHITE)]}, "new_item_ids[0]: must be a string"),
    ("modify_pending_order_payment", {**PAYMENT, "order_id": "#W2006"}, "Non-pending order cannot be modified"),
    ("modify_pending_order_payment", {**PAYMENT, "payment_method_id": "credit_card_0000"},
     "Payment method not found"),
    ("modify_pending_order_payment", {**PAYMENT, "payment_method_id": PAYPAL},
     "The new payment method should be different from the current one"),
    ("modify_pending_order_payment", {**PAYMENT, "order_id": "#W2004"},
     "There should be exactly one payment for a pending order"),
    ("modify_pending_order_payment", {"order_id": "#W2001", "payment_method_id": GIFT},
     "Insufficient gift card balance to pay for the order"),
    ("modify_pending_order_payment", {"order_id": "#W2001"}, "payment_method_id: field required"),
])
def test_a_refused_change_says_why_and_changes_nothing(name: str, arguments: dict, error: str) -> None:
    kit, db = tools()
    text, failed = tau2.run_tool(kit, name, arguments, tau2.RETAIL_TOOLS)
    assert failed and text.startswith(f"Error: {error}"), text
    assert db == DB


# -- through the harness --------------------------------------------------------------------------


def call(name: str, **arguments) -> str:
    return format_tool_calls([ToolCall(name, arguments)])


def _task(task_id: str, reason: str, action: tuple[str, dict], communicate: list[str], basis: list[str]) -> dict:
    name, arguments = action
    return {
        "id": task_id,
        "user_scenario": {"instructions": {
            "domain": "retail", "reason_for_call": reason, "known_info": "You are Ana Lee, email ana.lee@example.com.",
            "unknown_info": None, "task_instructions": "Confirm when asked. End the conversation once it is done."}},
        "initial_state": None,
        "evaluation_criteria": {
            "actions": [{"action_id": f"{task_id}_0", "name": "find_user_id_by_email",
                         "arguments": {"email": "ana.lee@example.com"}},
                        {"action_id": f"{task_id}_1", "name": name, "arguments": arguments}],
            "communicate_info": communicate, "nl_assertions": None, "reward_basis": basis},
    }


ACTIONS = {
    "exchange": ("exchange_delivered_order_items", {**EXCHANGE}),
    "modify": ("modify_pending_order_items", {"order_id": "#W2001", "item_ids": [RED, LARGE],
                                              "new_item_ids": [WHITE, SMALL], "payment_method_id": CARD}),
    "payment": ("modify_pending_order_payment", {"order_id": "#W2003", "payment_method_id": GIFT}),
}
TASKS = [
    _task("exchange", "You want to exchange the blue lamp of delivered order #W2002 for the white one, paying the "
          "difference by credit card.", ACTIONS["exchange"], ["17.5"], ["DB", "COMMUNICATE"]),
    _task("modify", "You want your pending order #W2001 to have the white lamp and the small mug instead, the "
          "difference on your credit card.", ACTIONS["modify"], [], ["DB", "ACTION"]),
    _task("payment", "You want to pay your pending order #W2003 with your gift card instead of PayPal.",
          ACTIONS["payment"], [], ["DB"]),
]


def script(name: str, arguments: dict, told: str) -> tuple[list[str], list[str]]:
    return ([call("find_user_id_by_email", email="ana.lee@example.com"),
             f"I can {name.replace('_', ' ')} as you ask. Shall I go ahead (yes/no)?",
             call(name, **arguments), told],
            ["Hi, I'm Ana Lee (ana.lee@example.com); I'd like to change an order.", "yes", "Thanks. ###STOP###"])


REFERENCE = {k: script(*ACTIONS[k], "Done; the price difference is 17.50.") for k in ACTIONS}
WRONG = {  # another variant, another card, another method
    "exchange": script("exchange_delivered_order_items", {**EXCHANGE, "new_item_ids": [RED]},
                       "Done; the price difference is 17.50."),
    "modify": script("modify_pending_order_items", {**ACTIONS["modify"][1], "payment_method_id": PAYPAL}, "Done."),
    "payment": script("modify_pending_order_payment", {**ACTIONS["payment"][1], "payment_method_id": CARD}, "Done."),
}


@pytest.fixture
def domains(tmp_path: Path) -> Path:
    return write_domain(tmp_path / "domains", "retail", TASKS, DB, "# Retail agent policy\nConfirm every change.\n")


def test_tasks_with_these_tools_are_no_longer_refused_and_the_reference_scores_one(domains: Path) -> None:
    for task in tau2.load_domain(domains / "retail"):
        tau2.check_supported(task)
    result, *_ = play_scripts(domains, REFERENCE, size=2)
    assert [e.label for e in result.episodes] == [f"retail/{t['id']}" for t in TASKS for _ in range(2)]
    assert all(e.success and e.error is None and e.terminated for e in result.episodes), result.episodes
    assert result.columns["tau2-retail"].success_rate == 1.0 and not result.columns["tau2-retail"].unavailable


def test_a_wrong_variant_card_or_method_scores_zero(domains: Path) -> None:
    result, *_ = play_scripts(domains, WRONG)
    assert [e.episode_return for e in result.episodes] == [0.0, 0.0, 0.0]
    assert all(e.terminated and e.error is None for e in result.episodes)
