"""``spade eval --suite acebench_agent`` on entries that involve ``FoodPlatform`` and ``Travel``
(with the phone classes), written here in ACEBench's published layout (``data_all/data_en``:
``data_agent_multi_step.json``, ``data_agent_multi_turn.json``, ``possible_answer/``), played
through the harness with the replay backend as the agent (and, multi-turn, as the user).

The expected end states are the benchmark's built-in data changed by the reference calls;
the figures they change are written out here (Jack's 120 yuan less the 78 of a Grilled Pork
Belly, Frank's bank 8000 less the 1200 of an economy CA1234 seat, ...)."""

from __future__ import annotations

import copy
import inspect
import json
from pathlib import Path

import pytest
from spade_core.actions import ToolCall, format_tool_calls
from spade_core.evaluation import SuiteContext
from spade_designer.llm.replay import ReplayBackend
from spade_eval.harness import evaluate

from spade_eval import acebench, acebench_apis, acebench_entries, acebench_travel

from .acebench_files import write_agent_data

CTX = SuiteContext(None, None)


def decl(name: str, summary: str, required: list[str], /, **props: str | dict) -> dict:
    """A function declaration as the benchmark's files write them (``"type": "dict"``)."""
    properties = {k: (v if isinstance(v, dict) else {"type": v, "description": k.replace("_", " ")})
                  for k, v in props.items()}
    return {"name": name, "description": summary,
            "parameters": {"type": "dict", "required": required, "properties": properties}}


ITEMS = {"type": "list", "description": "the products and their quantities",
         "items": {"type": "dict", "required": ["product", "quantity"],
                   "properties": {"product": {"type": "string", "description": "product"},
                                  "quantity": {"type": "integer", "description": "quantity"}}}}
#: The functions the benchmark shows the agent in a phone entry (every phone entry lists all).
PHONE_FUNCTIONS = [
    decl("turn_on_wifi", "Turn the WiFi on.", []),
    decl("login_device", "Log in to the device.", []),
    decl("send_message", "Send a message.", ["sender_name", "receiver_name", "message"],
         sender_name="string", receiver_name="string", message="string"),
    decl("view_messages_between_users", "The messages one user sent another.", ["sender_name", "receiver_name"],
         sender_name="string", receiver_name="string"),
    decl("delete_message", "Delete a message by its ID.", ["message_id"], message_id="integer"),
    decl("search_messages", "A user's messages holding a keyword.", ["user_name", "keyword"],
         user_name="string", keyword="string"),
    decl("get_latest_message_id", "The ID of the latest message.", []),
    decl("get_earliest_message_id", "The ID of the earliest message.", []),
    decl("add_reminder", "Add a reminder.", ["title", "description", "time"],
         title="string", description="string", time="string"),
    decl("view_reminder_by_title", "A reminder by its title.", ["title"], title="string"),
    decl("search_reminders", "Reminders holding a keyword.", ["keyword"], keyword="string"),
    decl("login_food_platform", "Log in to the food platform.", ["username", "password"],
         username="string", password="string"),
    decl("check_balance", "A user's balance.", ["user_name"], user_name="string"),
    decl("add_food_delivery_order", "Order food.", ["username", "merchant_name", "items"],
         username="string", merchant_name="string", items=ITEMS),
    decl("get_products", "A merchant's products.", ["merchant_name"], merchant_name="string"),
]
#: The functions the benchmark shows the agent in a Travel entry.
TRAVEL_FUNCTIONS = [
    decl("get_user_details", "A user's details.", ["user_id", "password"], user_id="string", password="string"),
    decl("get_flight_details", "Flights by origin and destination.", [], origin="string", destination="string"),
    decl("get_reservation_details", "Reservations by reservation or user ID.", [],
         reservation_id="string", user_id="string"),
    decl("find_transfer_flights", "Connecting flights through a transfer city.",
         ["origin_city", "transfer_city", "destination_city"],
         origin_city="string", transfer_city="string", destination_city="string"),
    decl("reserve_flight", "Book a flight.", ["user_id", "password", "flight_no", "cabin", "payment_method",
                                              "baggage_count"],
         user_id="string", password="string", flight_no="string", cabin="string", payment_method="string",
         baggage_count="integer"),
    decl("cancel_reservation", "Cancel a reservation.", ["user_id", "reservation_id", "reason"],
         user_id="string", reservation_id="string", reason="string"),
    decl("modify_flight", "Change a reservation's flight, cabin or bags.", ["user_id", "reservation_id"],
         user_id="string", reservation_id="string", new_flight_no="string", new_cabin="string",
         add_baggage="integer", new_payment_method="string"),
]
#: Public functions of the benchmark's classes that no entry declares (the agent can still call them).
UNDECLARED = {"get_all_message_times_with_ids", "delete_reminder", "view_all_reminders", "mark_as_notified",
              "view_logged_in_users", "view_orders", "search_orders", "authenticate_user", "get_baggage_allowance",
              "calculate_baggage_fee", "update_balance", "process_refund", "calculate_price_difference"}


def food_users(**balances: float) -> dict:
    users = acebench_apis.default_state("FoodPlatform")["users"]
    for name, balance in balances.items():
        users[name]["balance"] = balance
    return users


def travel_users(**changes: dict) -> dict:
    users = acebench_apis.default_state("Travel")["users"]
    for uid, change in changes.items():
        users[uid].update(change)
    return users


RESERVATIONS = acebench_apis.default_state("Travel")["reservations"]
INBOX = acebench_apis.default_state("MessageApi")["inbox"]
REMINDERS = acebench_apis.default_state("ReminderApi")["reminder_list"]
DEVICE_ON = {"BaseApi": {"wifi": True, "logged_in": True}}

# -- multi-step entries ---------------------------------------------------------------------------

BBQ = {"id": "agent_multi_step_0",
       "question": "I am Jack (username: Jack, password: password654). I want one barbecue dish from Jiutian BBQ "
                   "but have only 120 yuan: look at its menu first, then order one I can afford.",
       "initial_config": {"BaseApi": {"wifi": False, "logged_in": True}}, "path": [],
       "function": PHONE_FUNCTIONS, "involved_classes": ["BaseApi", "FoodPlatform"]}
BBQ_ORDER = {"user_name": "Jack", "merchant_name": "Jiutian BBQ", "total_price": 78.0,
             "items": [{"product": "Grilled Pork Belly", "quantity": 1, "price_per_unit": 78.0}]}
BBQ_ANSWER = {"id": BBQ["id"], "ground_truth": [
    DEVICE_ON, {"FoodPlatform": {"users": food_users(Jack=42.0), "logged_in_users": ["Jack"], "orders": [BBQ_ORDER]}}],
    "mile_stone": ["[turn_on_wifi()]", "[login_food_platform(username='Jack', password='password654')]",
                   "[add_food_delivery_order(username='Jack', merchant_name='Jiutian BBQ', "
                   "items=[{'product': 'Grilled Pork Belly', 'quantity': 1}])]"]}

TODO = {"id": "agent_multi_step_1",
        "question": "I am Eve (food platform account Eve, password password123). Do what my reminder 'To-do list' "
                    "says; if the inbox is full, delete the earliest message.",
        "initial_config": {"BaseApi": {"wifi": False, "logged_in": False}}, "path": [],
        "function": PHONE_FUNCTIONS, "involved_classes": ["BaseApi", "MessageApi", "ReminderApi", "FoodPlatform"]}
PRICE_TEXT = "The price of the purchased goods is 198.0 yuan."
TODO_ORDER = {"user_name": "Eve", "merchant_name": "Hema Fresh", "total_price": 198.0,
              "items": [{"product": "Fresh Gift Pack", "quantity": 2, "price_per_unit": 99.0}]}
TODO_ANSWER = {"id": TODO["id"], "ground_truth": [
    DEVICE_ON,
    {"MessageApi": {"inbox": {**{k: v for k, v in INBOX.items() if k != "3"},
                              "7": {"sender_id": "USR100", "receiver_id": "USR101", "message": PRICE_TEXT}}}},
    {"ReminderApi": {"reminder_list": REMINDERS}},
    {"FoodPlatform": {"users": food_users(Eve=302.0), "logged_in_users": ["Eve"], "orders": [TODO_ORDER]}}],
    "mile_stone": ["[login_device()]", "[view_reminder_by_title(title='To-do list')]", "[turn_on_wifi()]",
                   "[login_food_platform(username='Eve', password='password123')]",
                   "[add_food_delivery_order(username='Eve', merchant_name='Hema Fresh', "
                   "items=[{'product': 'Fresh Gift Pack', 'quantity': 2}])]",
                   "[get_earliest_message_id()]", "[delete_message(message_id=3)]",
                   f"[send_message(sender_name='Eve', receiver_name='Frank', message='{PRICE_TEXT}')]"]}

BOOK = {"id": "agent_multi_step_2",
        "question": "I am Frank (user ID user2, password password456). Book me an economy seat on flight CA1234 "
                    "from Beijing to Shanghai, paid by bank, with one checked bag.",
        "initial_config": {}, "path": [], "function": TRAVEL_FUNCTIONS, "involved_classes": ["Travel"]}
BOOKED = {"reservation_id": "res_5", "user_id": "user2", "flight_no": "CA1234", "payment_method": "bank",
          "cabin": "Economy Class", "baggage": 1}
BOOK_ANSWER = {"id": BOOK["id"], "ground_truth": [
    {"Travel": {"users": travel_users(user2={"bank_balance": 6800.0}), "reservations": [*RESERVATIONS, BOOKED]}}],
    "mile_stone": ["[get_flight_details(origin='Beijing', destination='Shanghai')]",
                   "[reserve_flight(user_id='user2', password='password456', flight_no='CA1234', "
                   "cabin='Economy Class', payment_method='bank', baggage_count=1)]"]}

# -- multi-turn entries ---------------------------------------------------------------------------

PIZZA = {"id": "agent_multi_turn_0",
         "question": "Your name is Grace (food platform account Grace, password password789). Frank sent you a "
                     "message asking for a takeout order; have it ordered.",
         "initial_config": DEVICE_ON, "path": [], "function": PHONE_FUNCTIONS,
         "involved_classes": ["BaseApi", "MessageApi", "FoodPlatform"]}
PIZZA_ORDER = {"user_name": "Grace", "merchant_name": "Domino's", "total_price": 68.0,
               "items": [{"product": "Margherita Pizza", "quantity": 1, "price_per_unit": 68.0}]}
PIZZA_ANSWER = {"id": PIZZA["id"], "ground_truth": [
    DEVICE_ON, {"MessageApi": {"inbox": INBOX}},
    {"FoodPlatform": {"users": food_users(Grace=82.0), "logged_in_users": ["Grace"], "orders": [PIZZA_ORDER]}}],
    "mile_stone": ["[view_messages_between_users(sender_name='Frank', receiver_name='Grace')]",
                   "[login_food_platform(username='Grace', password='password789')]",
                   "[add_food_delivery_order(username='Grace', merchant_name='Domino's', "
                   "items=[{'product': 'Margherita Pizza', 'quantity': 1}])]"]}

REBOOK = {"id": "agent_multi_turn_1",
          "question": "You are Eve (user ID user1, password password123). Move your reservation res_2 from "
                      "Shanghai to Beijing onto flight CZ4352 in economy class.",
          "initial_config": {}, "path": [], "function": TRAVEL_FUNCTIONS, "involved_classes": ["Travel"]}
REBOOKED = [RESERVATIONS[0], {**RESERVATIONS[1], "flight_no": "CZ4352", "cabin": "Economy Class"}, *RESERVATIONS[2:]]
REBOOK_ANSWER = {"id": REBOOK["id"], "ground_truth": [
    # the cabin difference is priced on the old flight MU5678: 1900 - 3000, 1100 back to the bank
    {"Travel": {"users": travel_users(user1={"bank_balance": 51100.0}), "reservations": REBOOKED}}],
    "mile_stone": ["[get_reservation_details(user_id='user1')]",
                   "[get_flight_details(origin='Shanghai', destination='Beijing')]",
                   "[modify_flight(user_id='user1', reservation_id='res_2', new_flight_no='CZ4352', "
                   "new_cabin='Economy Class')]"]}

TRANSFER = {"id": "agent_multi_turn_2",
            "question": "You are Grace (user ID user3, password password789) in Beijing. Book economy flights to "
                        "Shenzhen, one checked bag, paid by bank; with no direct flight, connect in Nanjing.",
            "initial_config": {}, "path": [], "function": TRAVEL_FUNCTIONS, "involved_classes": ["Travel"]}
LEGS = [{"reservation_id": "res_5", "user_id": "user3", "flight_no": "MU3561", "payment_method": "bank",
         "cabin": "Economy Class", "baggage": 1},
        {"reservation_id": "res_6", "user_id": "user3", "flight_no": "CZ1765", "payment_method": "bank",
         "cabin": "Economy Class", "baggage": 1}]
TRANSFER_ANSWER = {"id": TRANSFER["id"], "ground_truth": [
    {"Travel": {"users": travel_users(user3={"bank_balance": 2000.0}), "reservations": [*RESERVATIONS, *LEGS]}}],
    "mile_stone": ["[get_flight_details(origin='Beijing', destination='Shenzhen')]",
                   "[find_transfer_flights(origin_city='Beijing', transfer_city='Nanjing', destination_city='Shenzhen')]",
                   "[reserve_flight(user_id='user3', password='password789', flight_no='MU3561', cabin='Economy Class', "
                   "payment_method='bank', baggage_count=1), reserve_flight(user_id='user3', password='password789', "
                   "flight_no='CZ1765', cabin='Economy Class', payment_method='bank', baggage_count=1)]"]}


def call(name: str, **arguments) -> str:
    return format_tool_calls([ToolCall(name, arguments)])


def calls(*pairs: tuple[str, dict]) -> str:
    return format_tool_calls([ToolCall(n, a) for n, a in pairs])


def leg(flight_no: str) -> tuple[str, dict]:
    return ("reserve_flight", {"user_id": "user3", "password": "password789", "flight_no": flight_no,
                               "cabin": "Economy Class", "payment_method": "bank", "baggage_count": 1})


def order(username: str, merchant: str, product: str, quantity: int) -> str:
    return call("add_food_delivery_order", username=username, merchant_name=merchant,
                items=[{"product": product, "quantity": quantity}])


def book(**changes) -> str:
    args = {"user_id": "user2", "password": "password456", "flight_no": "CA1234", "cabin": "Economy Class",
            "payment_method": "bank", "baggage_count": 1}
    return call("reserve_flight", **{**args, **changes})


def rebook(flight_no: str = "CZ4352") -> str:
    return call("modify_flight", user_id="user1", reservation_id="res_2", new_flight_no=flight_no,
                new_cabin="Economy Class")


#: The reference calls of each entry (multi-turn: with the user's replies).
PERFECT = {
    BBQ["id"]: [call("turn_on_wifi"), call("login_food_platform", username="Jack", password="password654"),
                call("get_products", merchant_name="Jiutian BBQ"),
                order("Jack", "Jiutian BBQ", "Grilled Pork Belly", 1), "Ordered a Grilled Pork Belly for 78 yuan."],
    TODO["id"]: [call("login_device"), call("view_reminder_by_title", title="To-do list"), call("turn_on_wifi"),
                 call("login_food_platform", username="Eve", password="password123"),
                 order("Eve", "Hema Fresh", "Fresh Gift Pack", 2), call("get_earliest_message_id"),
                 call("delete_message", message_id=3),
                 call("send_message", sender_name="Eve", receiver_name="Frank", message=PRICE_TEXT), "Done."],
    BOOK["id"]: [call("get_flight_details", origin="Beijing", destination="Shanghai"), book(), "Booked: res_5."],
    PIZZA["id"]: [call("view_messages_between_users", sender_name="Frank", receiver_name="Grace"),
                  "Frank asks for a Margherita Pizza from Domino's. Shall I order it?",
                  call("login_food_platform", username="Grace", password="password789"),
                  order("Grace", "Domino's", "Margherita Pizza", 1), "Ordered: one Margherita Pizza, 68 yuan."],
    REBOOK["id"]: [call("get_reservation_details", user_id="user1"),
                   call("get_flight_details", origin="Shanghai", destination="Beijing"),
                   "I will move res_2 to CZ4352 in economy class; the difference is refunded. Confirm?",
                   rebook(), "Done: res_2 is now CZ4352, economy; 1100 yuan refunded to your bank."],
    TRANSFER["id"]: [call("get_flight_details", origin="Beijing", destination="Shenzhen"),
                     call("find_transfer_flights", origin_city="Beijing", transfer_city="Nanjing",
                          destination_city="Shenzhen"),
                     "No direct flight: MU3561 to Nanjing then CZ1765 to Shenzhen, economy, by bank. Book both?",
                     calls(leg("MU3561"), leg("CZ1765")), "Booked res_5 and res_6."],
}
USER = {
    PIZZA["id"]: ["What did Frank send me?", "Yes, order it. My account is Grace, password password789.",
                  "finish conversation"],
    REBOOK["id"]: ["I want to change my reservation res_2; I am user1, password password123.", "Yes.",
                   "finish conversation"],
    TRANSFER["id"]: ["I need economy flights from Beijing to Shenzhen; I am user3, password password789.",
                     "Yes, book both.", "finish conversation"],
}


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_agent_data(tmp_path / "data_en", [BBQ, TODO, BOOK], [PIZZA, REBOOK, TRANSFER],
                            [BBQ_ANSWER, TODO_ANSWER, BOOK_ANSWER], [PIZZA_ANSWER, REBOOK_ANSWER, TRANSFER_ANSWER])


def play(data: Path, entry_id: str, agent_lines: list[str], user_lines: list[str] | None = None, size: int = 1):
    """One entry played through the harness: its episode(s), the agent and the user."""
    user = ReplayBackend(list(user_lines if user_lines is not None else USER.get(entry_id, [])) * size, name="user")
    items = acebench.acebench_items(CTX, data=str(data), ids=entry_id, user=user, size=size)
    agent = ReplayBackend(agent_lines * size, name="agent")
    result = evaluate(agent, items, suite="acebench_agent", concurrency=1)
    return result, agent, user


def seen_by(backend: ReplayBackend) -> str:
    """Everything the backend was shown."""
    return "\n".join(str(m["content"]) for conversation in backend.calls for m in conversation)


def env_of(entry: dict, answer: dict, category: str | None = None) -> acebench.AceAgentEnv:
    cat = category or ("agent_multi_turn" if "multi_turn" in entry["id"] else "agent_multi_step")
    env = acebench.AceAgentEnv(acebench.AceEntry(cat, entry, answer), user_backend=ReplayBackend(["Hi"] * 4))
    env.reset()
    return env


# -- the reference answers ------------------------------------------------------------------------


@pytest.mark.parametrize("entry", [BBQ, TODO, BOOK, PIZZA, REBOOK, TRANSFER], ids=lambda e: e["id"])
def test_the_reference_calls_reach_the_end_state_with_every_milestone(data: Path, entry: dict) -> None:
    result, agent, user = play(data, entry["id"], PERFECT[entry["id"]])
    (episode,) = result.episodes
    assert episode.error is None and episode.success and episode.episode_return == 1.0
    column = "ACE-multi-turn" if "multi_turn" in entry["id"] else "ACE-multi-step"
    assert result.columns[column].success_rate == 1.0
    # every answer the classes gave came back to the agent, none of them an error
    assert "Error during execution" not in seen_by(agent)
    # the process the milestones are read from is the reference sequence itself: all found
    env = env_of(entry, {"id": entry["id"], "ground_truth": [], "mile_stone": []})
    process = [acebench.render_calls(_calls_in(line)) for line in PERFECT[entry["id"]] if _calls_in(line)]
    answer = next(a for a in (BBQ_ANSWER, TODO_ANSWER, BOOK_ANSWER, PIZZA_ANSWER, REBOOK_ANSWER, TRANSFER_ANSWER)
                  if a["id"] == entry["id"])
    assert acebench_entries.milestone_accuracy(answer["mile_stone"], process) == 1.0
    env.close()


def _calls_in(line: str) -> list:
    from spade_core.actions import parse_tool_action
    return list(parse_tool_action(line).calls)


def test_the_answers_the_agent_sees(data: Path) -> None:
    _, agent, _ = play(data, BBQ["id"], PERFECT[BBQ["id"]])
    seen = seen_by(agent)
    assert '"message": "Wi-Fi has been turned on"' in seen.replace('\\"', '"')
    assert "User Jack has successfully logged in!" in seen
    assert "Korean Grilled Beef" in seen and "128.0" in seen  # the menu, as Python prints a list
    assert "Food delivery order successfully placed with Jiutian BBQ. Total amount: 78.0 yuan" in seen
    _, agent, _ = play(data, BOOK["id"], PERFECT[BOOK["id"]])
    assert "Booking successful. Reservation ID: res_5. Total cost: 1200 yuan (including baggage fees)." in seen_by(agent)
    _, agent, user = play(data, TRANSFER["id"], PERFECT[TRANSFER["id"]])
    seen = seen_by(agent)
    assert "There are no direct flights that meet the criteria." in seen and "'first_leg'" in seen
    # multi-turn: the airline rules in short for the agent, the airline user's rules for the user
    assert acebench.AIRLINE_NOTE in seen and acebench.PHONE_NOTE not in seen
    assert "airline's booking assistant" in seen_by(user) and "round trip" in seen_by(user)
    _, agent, user = play(data, PIZZA["id"], PERFECT[PIZZA["id"]])
    assert acebench.PHONE_NOTE in seen_by(agent) and "phone's apps" in seen_by(user)


# -- wrong answers --------------------------------------------------------------------------------


def test_a_wrong_item_a_wrong_amount_or_a_missing_step_fails_the_end_state(data: Path) -> None:
    perfect = PERFECT[BBQ["id"]]
    # the wrong item: Korean Grilled Beef costs 128, more than Jack has; nothing is ordered
    wrong_item = [*perfect[:3], order("Jack", "Jiutian BBQ", "Korean Grilled Beef", 1), "Done."]
    result, agent, _ = play(data, BBQ["id"], wrong_item)
    assert not result.episodes[0].success and result.episodes[0].episode_return == pytest.approx(0.667)
    assert "Insufficient balance to place the order" in seen_by(agent)
    # the wrong amount: one gift pack instead of two (and the message says 99.0)
    todo = PERFECT[TODO["id"]]
    wrong_amount = [*todo[:4], order("Eve", "Hema Fresh", "Fresh Gift Pack", 1), *todo[5:7],
                    call("send_message", sender_name="Eve", receiver_name="Frank",
                         message="The price of the purchased goods is 99.0 yuan."), "Done."]
    result, _, _ = play(data, TODO["id"], wrong_amount)
    # the benchmark's greedy search looks for the missing order milestone to the end, so the
    # four after it are not found either: 4 of 8
    assert not result.episodes[0].success and result.episodes[0].episode_return == pytest.approx(0.5)
    # a missing step: without the WiFi the login fails, so the order is refused
    result, agent, _ = play(data, BBQ["id"], perfect[1:])
    # (the first milestone, never reached, takes the greedy search past the others: 0 of 3)
    assert not result.episodes[0].success and result.episodes[0].episode_return == 0.0
    seen = seen_by(agent)
    assert "Wi-Fi is not enabled, unable to login" in seen
    assert "User Jack is not logged in to the food platform" in seen
    assert result.columns["ACE-multi-step"].success_rate == 0.0


@pytest.mark.parametrize("wrong", [book(cabin="Business Class"), book(payment_method="cash"), book(baggage_count=3),
                                   book(flight_no="MU5678")], ids=["cabin", "payment", "bags", "flight"])
def test_a_wrong_booking_fails_the_end_state(data: Path, wrong: str) -> None:
    result, _, _ = play(data, BOOK["id"], [PERFECT[BOOK["id"]][0], wrong, "Booked."])
    (episode,) = result.episodes
    assert not episode.success and episode.episode_return == pytest.approx(0.5)


def test_a_wrong_multi_turn_answer_fails_the_end_state(data: Path) -> None:
    # another flight on the same route: the refund is the same, the flight is not
    lines = [*PERFECT[REBOOK["id"]][:3], rebook("CZ4321"), "Done."]
    result, _, _ = play(data, REBOOK["id"], lines)
    assert not result.episodes[0].success and result.episodes[0].episode_return == pytest.approx(0.667)
    # a missing step: only the first leg booked
    lines = [*PERFECT[TRANSFER["id"]][:3], calls(leg("MU3561")), "Booked res_5."]
    result, _, _ = play(data, TRANSFER["id"], lines)
    assert not result.episodes[0].success and result.episodes[0].episode_return == pytest.approx(0.667)
    # the wrong item: a Super Supreme Pizza
    lines = [*PERFECT[PIZZA["id"]][:3], order("Grace", "Domino's", "Super Supreme Pizza", 1), "Ordered."]
    result, _, _ = play(data, PIZZA["id"], lines)
    assert not result.episodes[0].success and result.columns["ACE-multi-turn"].success_rate == 0.0


# -- errors reach the agent -----------------------------------------------------------------------


def test_unknown_functions_and_bad_arguments_are_execution_errors_to_the_agent(data: Path) -> None:
    lines = [call("book_me_a_flight", to="Shanghai"),
             call("reserve_flight", user_id="user2", password="password456", flight_no="CA1234"),
             call("get_user_details", user="user2", password="password456"),
             book(password="wrong"), book(flight_no="ZZ999"), *PERFECT[BOOK["id"]]]
    result, agent, _ = play(data, BOOK["id"], lines)
    seen = seen_by(agent)
    assert "Error during execution: book_me_a_flight is not a function of the involved classes (Travel)" in seen
    assert ("Error during execution: Travel.reserve_flight() missing 3 required positional arguments: 'cabin', "
            "'payment_method', and 'baggage_count'") in seen
    assert "Error during execution: Travel.get_user_details() got an unexpected keyword argument 'user'" in seen
    # the benchmark's booking takes the error answer of a wrong password for the user and
    # fails on its missing membership level; an unknown flight fails the price lookup
    assert "Error during execution: 'membership_level'" in seen
    assert "Error during execution: 'NoneType' object is not subscriptable" in seen
    # nothing of that changed the state: the reference calls after it still succeed
    assert result.episodes[0].success


def test_multi_turn_stops_at_an_error_and_keeps_no_end_state_from_it(data: Path) -> None:
    env = env_of(TRANSFER, TRANSFER_ANSWER)
    obs = env.step(format_tool_calls([ToolCall("reserve_flight", {"user_id": "user3"}), ToolCall(*leg("MU3561"))]))[0]
    assert obs.count("<tool_response>") == 1 and "Error during execution" in obs
    assert len(env.world["Travel"].reservations) == 4  # the second call did not run
    assert env.end_state() == [] and "wrong number of classes" in env.score()[1]["end_state_errors"][0]
    env.step(call("get_flight_details", origin="Beijing", destination="Nanjing"))
    assert [next(iter(c)) for c in env.end_state()] == ["Travel"]
    # multi-step runs the message's other calls on
    env = env_of({**TRANSFER, "id": "agent_multi_step_9"}, TRANSFER_ANSWER)
    obs = env.step(format_tool_calls([ToolCall("reserve_flight", {"user_id": "user3"}), ToolCall(*leg("MU3561"))]))[0]
    assert obs.count("<tool_response>") == 2 and "Booking successful. Reservation ID: res_5." in obs
    assert env.end_state()


def test_the_multi_turn_reminder_class_lacks_search_reminders_as_published() -> None:
    entry = {"id": "agent_multi_turn_5", "question": "q", "initial_config": DEVICE_ON, "function": PHONE_FUNCTIONS,
             "involved_classes": ["BaseApi", "ReminderApi"]}
    answer = {"id": entry["id"], "ground_truth": [], "mile_stone": []}
    obs = env_of(entry, answer).step(call("search_reminders", keyword="team"))[0]
    assert "Error during execution: search_reminders is not a function" in obs
    obs = env_of({**entry, "id": "agent_multi_step_5"}, answer).step(call("search_reminders", keyword="team"))[0]
    assert "Team Meeting" in obs and "Monthly project review" in obs


# -- one entry's state never reaches another ------------------------------------------------------


def test_no_entry_sees_another_s_state(data: Path) -> None:
    # two episodes of the same entry, one after the other: the second starts from the built-in
    # data again (Jack not logged in, 120 yuan, no order), so both succeed
    result, agent, _ = play(data, BBQ["id"], PERFECT[BBQ["id"]], size=2)
    assert [e.success for e in result.episodes] == [True, True]
    assert "already logged in" not in seen_by(agent)
    # entries of one run that touch the same classes, in one order and the other
    items = acebench.acebench_items(CTX, data=str(data), categories="multi_step")
    lines = [line for e in (BBQ, TODO, BOOK) for line in PERFECT[e["id"]]]
    result = evaluate(ReplayBackend(lines), items, concurrency=1)
    assert [e.success for e in result.episodes] == [True, True, True]
    items = acebench.acebench_items(CTX, data=str(data), categories="multi_step", ids=f"{TODO['id']},{BBQ['id']}")
    assert [i.label for i in items] == [BBQ["id"], TODO["id"]]
    # an environment reset plays the entry again from the start
    env = env_of(BOOK, BOOK_ANSWER)
    env.step(book())
    assert env.world["Travel"].users["user2"]["bank_balance"] == 6800.0
    env.reset()
    assert env.world["Travel"].users["user2"]["bank_balance"] == 8000.0 and len(env.world["Travel"].reservations) == 4
    # the built-in data is copied for each class instance
    first = acebench.FoodPlatform(acebench_apis.Episode("agent_multi_step", {}))
    first.users["Eve"]["balance"] = 0.0
    first.merchant_list["Domino's"]["menu"].clear()
    second = acebench.FoodPlatform(acebench_apis.Episode("agent_multi_step", {}))
    assert second.users["Eve"]["balance"] == 500.0 and len(second.merchant_list["Domino's"]["menu"]) == 2


# -- the classes ----------------------------------------------------------------------------------


def test_every_function_of_each_class_is_declared_and_implemented() -> None:
    assert set(acebench.CLASSES) == {"baseapi", "messageapi", "reminderapi", "foodplatform", "travel"}
    tools: dict[str, type] = {}
    for cls in acebench.CLASSES.values():
        public = {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}
        assert public == set(cls.TOOLS), cls.NAME
        assert len(cls.TOOLS) == len(set(cls.TOOLS))
        for name in cls.TOOLS:
            tools.setdefault(name, getattr(cls, name))
    declared = {d["name"]: d for d in PHONE_FUNCTIONS + TRAVEL_FUNCTIONS}
    assert set(declared) | UNDECLARED == set(tools) and not set(declared) & UNDECLARED
    for name, d in declared.items():
        signature = inspect.signature(tools[name]).parameters
        params = [p for p in signature if p != "self"]
        assert list(d["parameters"]["properties"]) == params, name
        required = [p for p in params if signature[p].default is inspect.Parameter.empty]
        assert d["parameters"]["required"] == required, name
    # every function runs on a fresh instance of its class (one call each, where the agent
    # could make it), in both categories where the class has it
    samples = {
        "turn_on_wifi": {}, "login_device": {},
        "send_message": {"sender_name": "Eve", "receiver_name": "Frank", "message": "hi"},
        "delete_message": {"message_id": 1}, "view_messages_between_users": {"sender_name": "Eve", "receiver_name": "Frank"},
        "search_messages": {"user_name": "Eve", "keyword": "meeting"}, "get_all_message_times_with_ids": {},
        "get_latest_message_id": {}, "get_earliest_message_id": {},
        "view_reminder_by_title": {"title": "Team Meeting"},
        "add_reminder": {"title": "t", "description": "d", "time": "2024-07-20 10:00"},
        "delete_reminder": {"reminder_id": 1}, "view_all_reminders": {}, "mark_as_notified": {"reminder_id": 2},
        "search_reminders": {"keyword": "team"},
        "login_food_platform": {"username": "Eve", "password": "password123"}, "view_logged_in_users": {},
        "check_balance": {"user_name": "Eve"},
        "add_food_delivery_order": {"username": "Eve", "merchant_name": "Heytea",
                                    "items": [{"product": "Cheese Milk Tea", "quantity": 1}]},
        "get_products": {"merchant_name": "Heytea"}, "view_orders": {"user_name": "Eve"}, "search_orders": {"keyword": "tea"},
        "get_flight_details": {"origin": "Beijing"}, "get_user_details": {"user_id": "user1", "password": "password123"},
        "get_reservation_details": {"user_id": "user1"},
        "authenticate_user": {"user_id": "user1", "password": "password123"},
        "get_baggage_allowance": {"membership_level": "gold", "cabin_class": "Economy Class"},
        "find_transfer_flights": {"origin_city": "Beijing", "transfer_city": "Nanjing", "destination_city": "Shenzhen"},
        "calculate_baggage_fee": {"membership_level": "silver", "cabin_class": "Economy Class", "baggage_count": 4},
        "update_balance": {"user": {"cash_balance": 10.0, "bank_balance": 0.0}, "payment_method": "cash", "amount": -5},
        "reserve_flight": {"user_id": "user1", "password": "password123", "flight_no": "CZ4352",
                           "cabin": "Economy Class", "payment_method": "cash", "baggage_count": 1},
        "modify_flight": {"user_id": "user1", "reservation_id": "res_1", "add_baggage": 1},
        "cancel_reservation": {"user_id": "user1", "reservation_id": "res_1", "reason": "change of plans"},
        "process_refund": {"user": {"cash_balance": 0.0}, "amount": 5},
        "calculate_price_difference": {"flight": {"economy_price": 100, "business_price": 300},
                                       "old_cabin": "Economy Class", "new_cabin": "Business Class"},
    }
    assert set(samples) == set(tools)
    for cls in acebench.CLASSES.values():
        config = {"BaseApi": {"wifi": True, "logged_in": True, "logged_in_users": ["Eve"]}}
        for name in cls.TOOLS:
            api = cls(acebench_apis.Episode("agent_multi_step", config))
            answer = acebench.render_result(getattr(api, name)(**copy.deepcopy(samples[name])))
            assert "does not exist" not in answer and "not logged in" not in answer, (cls.NAME, name, answer)


def test_the_built_in_data_is_the_benchmark_s() -> None:
    raw = json.loads((Path(acebench.__file__).parent / acebench_apis.DEFAULTS_FILE).read_text(encoding="utf-8"))
    assert "zeppombal/ACEBench" in raw["source"] and "food_services.py" in raw["source"]
    assert raw["BaseApi"] == {"wifi": False, "logged_in": True}
    food = acebench_apis.default_state("FoodPlatform")
    assert {n: u["balance"] for n, u in food["users"].items()} == {
        "Eve": 500.0, "Frank": 300.0, "Grace": 150.0, "Helen": 800.0, "Isaac": 400.0, "Jack": 120.0}
    assert food["users"]["Jack"] == {"user_id": "U105", "password": "password654", "balance": 120.0}
    assert {m: [(p["product"], p["price"]) for p in v["menu"]] for m, v in food["merchant_list"].items()} == {
        "Domino's": [("Margherita Pizza", 68.0), ("Super Supreme Pizza", 88.0)],
        "Rice Village Bibimbap": [("Stone Pot Bibimbap", 35.0), ("Korean Beef Bibimbap", 45.0)],
        "Haidilao": [("Beef Rolls", 68.0), ("Seafood Platter", 88.0)],
        "Heytea": [("Cheese Milk Tea", 25.0), ("Four Seasons Spring Milk Tea", 22.0)],
        "Hema Fresh": [("Organic Vegetable Pack", 15.0), ("Fresh Gift Pack", 99.0)],
        "Jiutian BBQ": [("Korean Grilled Beef", 128.0), ("Grilled Pork Belly", 78.0)]}
    travel = acebench_apis.default_state("Travel")
    assert [(u["user_name"], u["cash_balance"], u["bank_balance"], u["membership_level"])
            for u in travel["users"].values()] == [("Eve", 2000.0, 50000.0, "regular"),
                                                   ("Frank", 8000.0, 8000.0, "silver"),
                                                   ("Grace", 1000.0, 5000.0, "gold")]
    assert [(f["flight_no"], f["origin"], f["destination"], f["depart_time"][:13], f["seats_available"],
             f["economy_price"], f["business_price"]) for f in travel["flights"]] == [
        ("CA1234", "Beijing", "Shanghai", "2024-07-15 08", 5, 1200, 3000),
        ("MU5678", "Shanghai", "Beijing", "2024-07-16 09", 3, 1900, 3000),
        ("CZ4321", "Shanghai", "Beijing", "2024-07-16 20", 8, 2500, 4000),
        ("CZ4352", "Shanghai", "Beijing", "2024-07-17 20", 8, 1600, 2500),
        ("MU3561", "Beijing", "Nanjing", "2024-07-18 08", 8, 1500, 4000),
        ("MU1566", "Beijing", "Nanjing", "2024-07-18 20", 8, 1500, 4000),
        ("CZ1765", "Nanjing", "Shenzhen", "2024-07-17 20", 8, 1500, 2500),
        ("CZ1765", "Nanjing", "Shenzhen", "2024-07-18 12", 8, 1500, 2500),
        ("MH1765", "Xiamen", "Chengdu", "2024-07-17 12", 8, 1500, 2500),
        ("MH2616", "Chengdu", "Xiamen", "2024-07-18 18", 8, 1500, 2500),
        ("MH2616", "Chengdu", "Fuzhou", "2024-07-16 18", 8, 1500, 2500)]
    assert [(r["reservation_id"], r["user_id"], r["flight_no"], r["cabin"]) for r in travel["reservations"]] == [
        ("res_1", "user1", "CA1234", "Economy Class"), ("res_2", "user1", "MU5678", "Business Class"),
        ("res_3", "user2", "MH1765", "Business Class"), ("res_4", "user2", "MU2616", "Business Class")]
    message = acebench_apis.default_state("MessageApi")
    assert (message["max_capacity"], message["message_id_counter"]) == (6, 6)
    assert [(k, m["sender_id"], m["receiver_id"], m["time"]) for k, m in message["inbox"].items()] == [
        ("1", "USR100", "USR101", "2024-06-09"), ("2", "USR101", "USR102", "2024-03-09"),
        ("3", "USR102", "USR103", "2023-12-05"), ("4", "USR103", "USR102", "2024-09-09"),
        ("5", "USR104", "USR105", "2024-06-06"), ("6", "USR105", "USR104", "2024-01-15")]
    reminder = acebench_apis.default_state("ReminderApi")
    assert (reminder["max_capacity"], reminder["reminder_id_counter"]) == (6, 3)
    assert [(k, r["reminder_id"], r["title"]) for k, r in reminder["reminder_list"].items()] == [
        ("1", 1001, "Doctor's Appointment"), ("2", 1002, "Team Meeting"), ("3", 1003, "To-do list")]


def test_initial_config_is_read_as_the_benchmark_reads_it() -> None:
    config = {"BaseApi": {"wifi": True, "logged_in_users": ["Eve"]}, "FoodPlatform": {"logged_in_users": ["Frank"]},
              "MessageApi": {"inbox": {}}, "ReminderApi": {"reminder_list": {}}}
    entry = {"id": "agent_multi_step_7", "question": "q", "initial_config": config, "function": PHONE_FUNCTIONS,
             "involved_classes": ["BaseApi", "MessageApi", "ReminderApi", "FoodPlatform"]}
    env = env_of(entry, {"id": entry["id"], "ground_truth": [], "mile_stone": []})
    env.step(call("view_all_reminders"))
    state = {next(iter(c)): next(iter(c.values())) for c in env.end_state()}
    # BaseApi's object sets the device (logged_in on by default) and FoodPlatform's logged-in
    # users; the classes' own objects are not read, their data is the built-in data
    assert state["BaseApi"] == {"wifi": True, "logged_in": True}
    assert state["FoodPlatform"]["logged_in_users"] == ["Eve"]
    assert state["MessageApi"]["inbox"] == INBOX and state["ReminderApi"]["reminder_list"] == REMINDERS
    # a device call reaches every phone class
    env = env_of({**entry, "initial_config": {}}, {"id": entry["id"], "ground_truth": [], "mile_stone": []})
    assert "Wi-Fi is not enabled" in env.step(call("login_food_platform", username="Eve", password="password123"))[0]
    assert "Wi-Fi is turned off" in env.step(call("send_message", sender_name="Eve", receiver_name="Frank",
                                                  message="x"))[0]
    env.step(call("turn_on_wifi"))
    assert "successfully logged in" in env.step(call("login_food_platform", username="Eve", password="password123"))[0]
    assert "Inbox capacity is full" in env.step(call("send_message", sender_name="Eve", receiver_name="Frank",
                                                     message="x"))[0]


def test_the_travel_rules() -> None:
    episode = acebench_apis.Episode("agent_multi_turn", {})
    travel = acebench.Travel(episode)
    # cancellation: more than a day before departure (now is 2024-07-14 06:00) is free, the
    # refund goes to cash and the reservation stays
    assert travel.cancel_reservation("user1", "res_1", "change of plans") == (
        "More than 24 hours before departure. Free cancellation successful, 1200 yuan has been refunded.")
    assert travel.users["user1"]["cash_balance"] == 3200.0 and len(travel.reservations) == 4
    assert travel.cancel_reservation("user1", "res_2", acebench_travel.AIRLINE_CANCELED).startswith(
        "The flight has been canceled. Your reservation will be canceled free of charge, and 3000 yuan")
    travel.flights[1]["depart_time"] = "2024-07-14 20:00:00"
    assert travel.cancel_reservation("user1", "res_2", "other") == (
        "Less than 24 hours before departure. A cancellation fee of 300.0 yuan has been deducted, and 2700.0 yuan "
        "has been refunded.")
    travel.flights[1]["depart_time"] = "2024-07-13 20:00:00"
    assert travel.cancel_reservation("user1", "res_2", "other") == "The flight segment has been used and cannot be canceled."
    assert travel.cancel_reservation("user2", "res_4", "other") == "Invalid flight information."  # MU2616 is no flight
    assert travel.cancel_reservation("user2", "res_1", "other") == "Invalid reservation ID or it does not belong to the user."
    # bags: the free allowance by level and cabin, 50 yuan each further one
    assert travel.calculate_baggage_fee("regular", "Economy Class", 3) == 100
    assert travel.calculate_baggage_fee("gold", "Business Class", 3) == 0
    travel = acebench.Travel(episode)
    assert travel.modify_flight("user1", "res_2", add_baggage=2) == "Baggage has been added. Additional fee to be paid: 50."
    assert travel.users["user1"]["bank_balance"] == 49950.0 and travel.reservations[1]["baggage"] == 3
    assert travel.modify_flight("user1", "res_2", new_flight_no="CA1234") == (
        "Flight change failed: Invalid new flight number or destination does not match.")
    travel.users["user1"]["cash_balance"] = 100.0
    assert travel.modify_flight("user1", "res_1", new_cabin="Business Class", new_payment_method="cash") == (
        "Insufficient balance to pay the cabin price difference.")
    assert travel.reservations[0]["cabin"] == "Business Class"  # changed all the same, as there
    assert travel.modify_flight("user2", "res_2") == "Reservation not found or user ID does not match."
    assert travel.modify_flight("user1", "res_1") == "Modification completed with no additional fees."
    assert travel.reserve_flight("user3", "password789", "MU1566", "Business Class", "card", 3) == "Invalid payment method"
    assert travel.reserve_flight("user3", "password789", "MU1566", "Business Class", "cash", 3) == (
        "Your cash balance is insufficient. Please consider using another payment method.")
    assert travel.get_user_details("user3", "nope") == {"status": "error", "message": "Incorrect username or password."}
    assert "password" not in travel.get_user_details("user3", "password789")
    assert travel.get_reservation_details() == {"status": "error",
                                                "message": "Please provide a valid reservation ID or user ID"}
    assert travel.get_reservation_details(reservation_id="res_4")[0]["flight_info"] is None
    assert travel.find_transfer_flights("Beijing", "Nanjing", "Xiamen") == (
        "No connecting flights that meet the criteria were found.")
    # MU3561 lands in Nanjing 10:00 on the 18th: only the 12:30 CZ1765 of that day connects
    pairs = travel.find_transfer_flights("Beijing", "Nanjing", "Shenzhen")
    assert [(p["first_leg"]["flight_no"], p["second_leg"]["depart_time"]) for p in pairs] == [
        ("MU3561", "2024-07-18 12:30:00")]


def test_the_food_and_phone_rules() -> None:
    episode = acebench_apis.Episode("agent_multi_step", {"BaseApi": {"wifi": True, "logged_in": True}})
    food = acebench.FoodPlatform(episode)
    assert food.add_food_delivery_order("Eve", "Heytea", [{"product": "Cheese Milk Tea", "quantity": 1}]) == {
        "status": False, "message": "User Eve is not logged in to the food platform"}
    assert food.login_food_platform("Eve", "nope")["message"] == "Incorrect password"
    assert food.login_food_platform("Zoe", "x")["message"] == "User does not exist"
    food.login_food_platform("Eve", "password123")
    assert food.login_food_platform("Eve", "password123")["message"] == "Eve is already logged in"
    assert food.add_food_delivery_order("Eve", "KFC", [])["message"] == "Merchant does not exist"
    assert food.add_food_delivery_order("Eve", "Heytea", [{"product": "Cheese Milk Tea", "quantity": 0}])[
        "message"] == "Invalid quantity 0 for product Cheese Milk Tea"
    assert food.add_food_delivery_order("Eve", "Heytea", [{"product": "Coffee", "quantity": 1}])[
        "message"] == "Product Coffee does not exist in Heytea's menu"
    assert food.add_food_delivery_order("Eve", "Heytea", [{"product": "Cheese Milk Tea"}])["status"]  # quantity 1
    assert food.check_balance("Eve") == 475.0 and food.check_balance("Zoe") == 0.0
    assert food.search_orders("cheese")["orders"][0]["total_price"] == 25.0
    assert food.view_orders("Jack") == {"status": False, "message": "User has no order records"}
    message = acebench.MessageApi(episode)
    assert message.get_earliest_message_id()["message_id"] == 3 and message.get_latest_message_id()["message_id"] == 4
    message.delete_message(4)
    message.send_message("Eve", "Frank", "hello")
    assert 7 in message.inbox and "time" not in message.inbox[7]
    with pytest.raises(KeyError):  # the benchmark's lookup fails on a message without a time
        message.get_latest_message_id()
    assert message.delete_message("7") == {"status": False, "message": "Message ID does not exist"}  # keys are numbers
    reminder = acebench.ReminderApi(episode)
    for n in range(3):
        reminder.add_reminder(f"r{n}", "d", "2024-07-20 10:00")
    assert reminder.add_reminder("r3", "d", "t")["message"] == "Reminder capacity is full. Unable to add a new reminder."
    assert reminder._saved()["reminder_list"]["6"]["reminder_id"] == 6
