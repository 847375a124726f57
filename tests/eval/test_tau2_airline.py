"""The tau2_bench adapter's airline domain: its tools on a database written here in the
benchmark's layout (``flights``, ``users``, ``reservations``), and whole conversations
through the harness with both models the replay backend (the agent under test answers
from a script, the simulated user from another), as in ``test_tau2_suite.py``."""

from __future__ import annotations

import copy
import inspect
import json
import re
from pathlib import Path

import pytest
from spade_core.actions import ToolCall, format_tool_calls
from spade_core.app.cli import build_app
from spade_core.evaluation import SuiteContext
from spade_designer.llm.replay import ReplayBackend
from typer.testing import CliRunner

from spade_eval import tau2

from .tau2_scripts import play_scripts, write_domain

CTX = SuiteContext(None, None)

#: The benchmark's published airline tool set.
PUBLISHED_AIRLINE_TOOLS = {
    "book_reservation", "calculate", "cancel_reservation", "get_reservation_details", "get_user_details",
    "list_all_airports", "search_direct_flight", "search_onestop_flight", "send_certificate",
    "transfer_to_human_agents", "update_reservation_baggages", "update_reservation_flights",
    "update_reservation_passengers", "get_flight_status"}


def _open(seats: tuple[int, int, int], prices: tuple[int, int, int]) -> dict:
    cabins = ("basic_economy", "economy", "business")
    return {"status": "available", "available_seats": dict(zip(cabins, seats, strict=True)),
            "prices": dict(zip(cabins, prices, strict=True))}


def _flight(number: str, origin: str, destination: str, leaves: str, arrives: str, dates: dict) -> dict:
    return {"flight_number": number, "origin": origin, "destination": destination,
            "scheduled_departure_time_est": leaves, "scheduled_arrival_time_est": arrives, "dates": dates}


def _address(street: str, city: str, state: str, zip_code: str) -> dict:
    return {"address1": street, "address2": None, "city": city, "country": "USA", "state": state, "zip": zip_code}


MIA = {"first_name": "Mia", "last_name": "Park", "dob": "1990-03-14"}
JUN = {"first_name": "Jun", "last_name": "Park", "dob": "2015-06-01"}
LEO = {"first_name": "Leo", "last_name": "Ross", "dob": "1985-11-02"}
ANA = {"first_name": "Ana", "last_name": "Ross", "dob": "1987-01-20"}

DB = {
    "flights": {
        "HAT101": _flight("HAT101", "JFK", "SFO", "08:00:00", "11:30:00", {
            "2024-05-10": {"status": "landed", "actual_departure_time_est": "2024-05-10T08:02:00",
                           "actual_arrival_time_est": "2024-05-10T11:20:00"},
            "2024-05-20": _open((4, 9, 2), (90, 150, 420)),
            "2024-05-21": _open((3, 6, 1), (95, 170, 450))}),
        "HAT102": _flight("HAT102", "SFO", "JFK", "13:00:00", "21:30:00", {
            "2024-05-25": _open((5, 8, 3), (85, 140, 390)),
            "2024-05-26": _open((5, 7, 3), (70, 120, 380))}),
        "HAT103": _flight("HAT103", "JFK", "SFO", "17:00:00", "20:30:00", {
            "2024-05-20": {"status": "delayed", "estimated_departure_time_est": "2024-05-20T19:00:00",
                           "estimated_arrival_time_est": "2024-05-20T22:30:00"},
            "2024-05-21": _open((2, 1, 0), (95, 170, 460))}),
        "HAT104": _flight("HAT104", "SFO", "JFK", "06:00:00", "14:30:00", {"2024-05-12": {"status": "cancelled"}}),
        "HAT201": _flight("HAT201", "JFK", "ORD", "06:00:00", "08:00:00", {"2024-05-20": _open((3, 5, 2), (40, 60, 200))}),
        "HAT202": _flight("HAT202", "ORD", "SFO", "09:30:00", "12:00:00", {"2024-05-20": _open((3, 5, 2), (50, 80, 250))}),
        "HAT203": _flight("HAT203", "ORD", "SFO", "07:00:00", "09:30:00", {"2024-05-20": _open((3, 5, 2), (50, 75, 240))}),
        "HAT301": _flight("HAT301", "SFO", "SEA", "22:00:00", "01:00:00+1", {"2024-05-20": _open((2, 4, 1), (60, 90, 300))}),
        "HAT302": _flight("HAT302", "SEA", "BOS", "07:00:00", "15:00:00", {"2024-05-21": _open((2, 4, 1), (80, 130, 400))}),
    },
    "users": {
        "mia_park_2001": {
            "user_id": "mia_park_2001", "name": {"first_name": "Mia", "last_name": "Park"},
            "address": _address("12 Harbor Rd", "Brooklyn", "NY", "11201"), "email": "mia.park@example.com",
            "dob": "1990-03-14",
            "payment_methods": {
                "credit_card_1111": {"source": "credit_card", "id": "credit_card_1111", "brand": "visa",
                                     "last_four": "4321"},
                "gift_card_2222": {"source": "gift_card", "id": "gift_card_2222", "amount": 100},
                "certificate_3333": {"source": "certificate", "id": "certificate_3333", "amount": 150}},
            "saved_passengers": [JUN], "membership": "gold", "reservations": ["RES001", "RES002"]},
        "leo_ross_3002": {
            "user_id": "leo_ross_3002", "name": {"first_name": "Leo", "last_name": "Ross"},
            "address": _address("3 Pine Ave", "Oakland", "CA", "94601"), "email": "leo.ross@example.com",
            "dob": "1985-11-02",
            "payment_methods": {
                "credit_card_4444": {"source": "credit_card", "id": "credit_card_4444", "brand": "mastercard",
                                     "last_four": "8765"},
                "gift_card_5555": {"source": "gift_card", "id": "gift_card_5555", "amount": 40}},
            "saved_passengers": [], "membership": "regular", "reservations": ["RES003"]},
    },
    "reservations": {
        "RES001": {"reservation_id": "RES001", "user_id": "mia_park_2001", "origin": "JFK", "destination": "SFO",
                   "flight_type": "round_trip", "cabin": "economy",
                   "flights": [{"flight_number": "HAT101", "origin": "JFK", "destination": "SFO",
                                "date": "2024-05-20", "price": 150},
                               {"flight_number": "HAT102", "origin": "SFO", "destination": "JFK",
                                "date": "2024-05-25", "price": 140}],
                   "passengers": [MIA], "payment_history": [{"payment_id": "credit_card_1111", "amount": 290}],
                   "created_at": "2024-05-01T09:00:00", "total_baggages": 1, "nonfree_baggages": 0,
                   "insurance": "no"},
        "RES002": {"reservation_id": "RES002", "user_id": "mia_park_2001", "origin": "JFK", "destination": "SFO",
                   "flight_type": "one_way", "cabin": "business",
                   "flights": [{"flight_number": "HAT101", "origin": "JFK", "destination": "SFO",
                                "date": "2024-05-21", "price": 450}],
                   "passengers": [MIA, JUN],
                   "payment_history": [{"payment_id": "gift_card_2222", "amount": 60},
                                       {"payment_id": "credit_card_1111", "amount": 900}],
                   "created_at": "2024-05-14T20:00:00", "total_baggages": 2, "nonfree_baggages": 0,
                   "insurance": "yes"},
        "RES003": {"reservation_id": "RES003", "user_id": "leo_ross_3002", "origin": "SFO", "destination": "JFK",
                   "flight_type": "one_way", "cabin": "economy",
                   "flights": [{"flight_number": "HAT102", "origin": "SFO", "destination": "JFK",
                                "date": "2024-05-26", "price": 120}],
                   "passengers": [LEO, ANA], "payment_history": [{"payment_id": "credit_card_4444", "amount": 240}],
                   "created_at": "2024-05-02T11:30:00", "total_baggages": 2, "nonfree_baggages": 0,
                   "insurance": "no"},
    },
}

POLICY = """# Airline agent policy (written for these tests)
The current time is 2024-05-15 15:00:00 EST. Get the user id first. Before booking, changing or
cancelling anything, state what will be done and what it costs, and wait for an explicit yes.
Each checked bag beyond the free allowance costs 50 dollars; insurance costs 30 per passenger.
A certificate pays only for a new booking; changes are paid with a credit card or a gift card.
"""

BOOKING = {"user_id": "mia_park_2001", "origin": "JFK", "destination": "SFO", "flight_type": "one_way",
           "cabin": "economy", "flights": [{"flight_number": "HAT101", "date": "2024-05-20"}],
           "passengers": [MIA],
           "payment_methods": [{"payment_id": "certificate_3333", "amount": 150},
                               {"payment_id": "gift_card_2222", "amount": 50},
                               {"payment_id": "credit_card_1111", "amount": 30}],
           "total_baggages": 4, "nonfree_baggages": 1, "insurance": "yes"}
CHANGE = {"reservation_id": "RES001", "cabin": "economy",
          "flights": [{"flight_number": "HAT101", "date": "2024-05-21"}, {"flight_number": "HAT102", "date": "2024-05-25"}],
          "payment_id": "gift_card_2222"}
BAGS = {"reservation_id": "RES003", "total_baggages": 4, "nonfree_baggages": 2, "payment_id": "credit_card_4444"}
RENAMED = {"reservation_id": "RES003", "passengers": [LEO, {**ANA, "first_name": "Anna"}]}


def _task(task_id: str, reason: str, known: str, actions: list[tuple[str, dict]], communicate: list[str],
          basis: list[str]) -> dict:
    return {
        "id": task_id,
        "description": {"purpose": "written for this adapter's tests", "relevant_policies": None, "notes": None},
        "user_scenario": {"persona": None, "instructions": {
            "domain": "airline", "reason_for_call": reason, "known_info": known, "unknown_info": None,
            "task_instructions": "Answer yes when asked to confirm. End the conversation once it is done."}},
        "initial_state": None,
        "evaluation_criteria": {
            "actions": [{"action_id": f"{task_id}_{k}", "name": name, "arguments": args, "info": None}
                        for k, (name, args) in enumerate(actions)],
            "communicate_info": communicate, "nl_assertions": None, "reward_basis": basis},
        "annotations": None,
    }


TASKS = [
    _task("0", "You want a one-way economy flight from JFK to SFO on 2024-05-20 for yourself, with insurance "
          "and four checked bags, paid with your certificate, then 50 from your gift card, the rest on your visa.",
          "You are Mia Park, user id mia_park_2001.",
          [("get_user_details", {"user_id": "mia_park_2001"}),
           ("search_direct_flight", {"origin": "JFK", "destination": "SFO", "date": "2024-05-20"}),
           ("book_reservation", BOOKING)], ["HATHAT"], ["DB", "COMMUNICATE"]),
    _task("1", "You want to cancel reservation RES002; your plans changed.", "You are mia_park_2001.",
          [("get_user_details", {"user_id": "mia_park_2001"}),
           ("get_reservation_details", {"reservation_id": "RES002"}),
           ("cancel_reservation", {"reservation_id": "RES002"})], ["960"], ["DB", "COMMUNICATE"]),
    _task("2", "You want the outbound flight of RES001 moved to 2024-05-21 (same flight number), the return kept; "
          "pay any difference with your gift card.", "You are mia_park_2001.",
          [("get_reservation_details", {"reservation_id": "RES001"}),
           ("search_direct_flight", {"origin": "JFK", "destination": "SFO", "date": "2024-05-21"}),
           ("update_reservation_flights", CHANGE)], [], ["DB", "ACTION"]),
    _task("3", "You want two more checked bags on RES003, paid with your mastercard.", "You are leo_ross_3002.",
          [("get_reservation_details", {"reservation_id": "RES003"}),
           ("update_reservation_baggages", BAGS)], [], ["DB"]),
    _task("4", "Your wife's first name is misspelled on RES003: it is Anna (Ross, born 1987-01-20).",
          "You are leo_ross_3002.",
          [("get_reservation_details", {"reservation_id": "RES003"}),
           ("update_reservation_passengers", RENAMED)], [], ["DB"]),
    _task("5", "You want to know whether flight HAT103 of 2024-05-20 is on time.", "You are mia_park_2001.",
          [("get_flight_status", {"flight_number": "HAT103", "date": "2024-05-20"})], ["delayed"],
          ["DB", "COMMUNICATE"]),
    _task("6", "An agent promised you a 100 dollar certificate for your cancelled flight HAT104 of 2024-05-12.",
          "You are leo_ross_3002.",
          [("get_flight_status", {"flight_number": "HAT104", "date": "2024-05-12"}),
           ("send_certificate", {"user_id": "leo_ross_3002", "amount": 100})], [], ["DB"]),
]


def call(name: str, **arguments) -> str:
    return format_tool_calls([ToolCall(name, arguments)])


def calls(*pairs: tuple[str, dict]) -> str:
    return format_tool_calls([ToolCall(name, args) for name, args in pairs])


#: Per task: the agent's messages (each a step) and the user's (the first answers the greeting).
REFERENCE = {
    "0": ([call("get_user_details", user_id="mia_park_2001"),
           call("search_direct_flight", origin="JFK", destination="SFO", date="2024-05-20"),
           "HAT101 leaves JFK at 08:00 on 2024-05-20, economy 150. With insurance (30) and one paid bag (50) the total "
           "is 230: certificate_3333 150, gift card 50, visa 30. Shall I book it (yes/no)?",
           call("book_reservation", **BOOKING),
           "Booked: your reservation id is HATHAT."],
          ["Hi, I'm Mia Park (mia_park_2001). I need a one-way economy flight JFK to SFO on 2024-05-20, with "
           "insurance and four bags.", "yes", "Thanks! ###STOP###"]),
    "1": ([calls(("get_user_details", {"user_id": "mia_park_2001"}),
                 ("get_reservation_details", {"reservation_id": "RES002"})),
           "RES002 (business, booked yesterday) can be cancelled; 960 goes back to the original payment methods. "
           "Confirm (yes/no)?",
           call("cancel_reservation", reservation_id="RES002"),
           "Cancelled; the refund of 960 reaches your original payment methods in 5 to 7 business days."],
          ["Hello, I'm mia_park_2001; please cancel reservation RES002, my plans changed.", "yes",
           "###STOP###"]),
    "2": ([call("get_reservation_details", reservation_id="RES001"),
           call("search_direct_flight", origin="JFK", destination="SFO", date="2024-05-21"),
           "HAT101 on 2024-05-21 costs 170 in economy, 20 more than you paid; the return stays. The 20 goes on "
           "gift_card_2222. Confirm (yes/no)?",
           call("update_reservation_flights", **CHANGE),
           "Done: your outbound flight is now HAT101 on 2024-05-21."],
          ["Hi, mia_park_2001 here. Please move the outbound flight of RES001 to 2024-05-21 and keep the return; "
           "use my gift card.", "yes", "Great. ###STOP###"]),
    "3": ([call("get_reservation_details", reservation_id="RES003"),
           "Two passengers in economy get two free bags; two more make 4 in total, 2 paid at 50 each: 100 on "
           "credit_card_4444. Confirm (yes/no)?",
           call("update_reservation_baggages", **BAGS),
           "Done: RES003 now has 4 checked bags."],
          ["I'm leo_ross_3002. Add two checked bags to RES003, on my mastercard.", "yes", "###STOP###"]),
    "4": ([call("get_reservation_details", reservation_id="RES003"),
           "I will change passenger 2 of RES003 to Anna Ross, born 1987-01-20. Confirm (yes/no)?",
           call("update_reservation_passengers", **RENAMED),
           "Updated."],
          ["I'm leo_ross_3002; on RES003 my wife's name should be Anna Ross.", "yes", "###STOP###"]),
    "5": ([call("get_flight_status", flight_number="HAT103", date="2024-05-20"),
           "HAT103 of 2024-05-20 is delayed."],
          ["Is flight HAT103 on 2024-05-20 on time?", "OK, thanks. ###STOP###"]),
    "6": ([call("get_flight_status", flight_number="HAT104", date="2024-05-12"),
           "HAT104 of 2024-05-12 was indeed cancelled. I can send you a 100 certificate. Confirm (yes/no)?",
           call("send_certificate", user_id="leo_ross_3002", amount=100),
           "The certificate is in your profile."],
          ["I'm leo_ross_3002; I was promised a 100 certificate for my cancelled flight HAT104 of 2024-05-12.",
           "yes", "###STOP###"]),
}


def _swap(task_id: str, index: int, message: str) -> tuple[list[str], list[str]]:
    agent, said = REFERENCE[task_id]
    return [*agent[:index], message, *agent[index + 1:]], said


#: A wrong answer for every task: wrong payment, wrong reservation, wrong flight, a missing
#: action, a wrong passenger, a wrong fact told, a wrong amount.
WRONG = {
    "0": _swap("0", 3, call("book_reservation", **{**BOOKING, "payment_methods": [
        {"payment_id": "credit_card_1111", "amount": 230}]})),
    "1": _swap("1", 2, call("cancel_reservation", reservation_id="RES001")),
    "2": _swap("2", 3, call("update_reservation_flights", **{**CHANGE, "flights": [
        {"flight_number": "HAT103", "date": "2024-05-21"}, {"flight_number": "HAT102", "date": "2024-05-25"}]})),
    "3": ([REFERENCE["3"][0][0], REFERENCE["3"][0][1], "Done: RES003 now has 4 checked bags."],
          REFERENCE["3"][1]),
    "4": _swap("4", 2, call("update_reservation_passengers", reservation_id="RES003",
                            passengers=[LEO, {**ANA, "first_name": "Anna", "dob": "1987-01-02"}])),
    "5": _swap("5", 1, "HAT103 of 2024-05-20 is on time."),
    "6": _swap("6", 2, call("send_certificate", user_id="leo_ross_3002", amount=150)),
}


@pytest.fixture
def domains(tmp_path: Path) -> Path:
    return write_domain(tmp_path / "domains", "airline", TASKS, DB, POLICY)


def play(domains: Path, scripts: dict[str, tuple[list[str], list[str]]], *, size: int = 1, **options):
    """:func:`.tau2_scripts.play_scripts`: (result, agent backend, items)."""
    result, agent, _, items = play_scripts(domains, scripts, size=size, **options)
    return result, agent, items


def tools() -> tuple[tau2.AirlineTools, dict]:
    db = copy.deepcopy(DB)
    return tau2.AirlineTools(db), db


def run(kit: tau2.AirlineTools, name: str, **arguments) -> str:
    text, failed = tau2.run_tool(kit, name, arguments, tau2.AIRLINE_TOOLS)
    assert not failed, text
    return text


def fails(kit: tau2.AirlineTools, name: str, **arguments) -> str:
    text, failed = tau2.run_tool(kit, name, arguments, tau2.AIRLINE_TOOLS)
    assert failed and text.startswith("Error: "), text
    return text


# -- the declarations and the implementations -----------------------------------------------------


def test_every_declared_airline_tool_is_implemented_and_every_implemented_one_declared() -> None:
    assert set(tau2.AIRLINE_TOOLS) == PUBLISHED_AIRLINE_TOOLS
    assert tau2.NOT_IMPLEMENTED["airline"] == tau2.AIRLINE_NOT_IMPLEMENTED == ()
    assert tau2.DOMAINS["airline"] == (tau2.AirlineTools, tau2.AIRLINE_TOOLS)
    for cls, declared in (tau2.AirlineTools, tau2.AIRLINE_TOOLS), (tau2.RetailTools, tau2.RETAIL_TOOLS):
        public = {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}
        assert public == set(declared), cls
        for name, decl in declared.items():
            assert decl["type"] == "function" and decl["function"]["name"] == name and decl["function"]["description"]
            params = decl["function"]["parameters"]
            signature = [p for p in inspect.signature(getattr(cls, name)).parameters if p != "self"]
            assert list(params["properties"]) == signature and params["required"] == signature, name
            assert all(p.get("description") for p in params["properties"].values()), name
    assert set(tau2.NOT_IMPLEMENTED["retail"]).isdisjoint(tau2.RETAIL_TOOLS)


# -- the tools' semantics -------------------------------------------------------------------------


def test_booking_takes_the_payments_the_seats_and_adds_the_reservation() -> None:
    kit, db = tools()
    out = json.loads(run(kit, "book_reservation", **BOOKING))
    assert out["reservation_id"] == "HATHAT" and out["created_at"] == "2024-05-15T15:00:00"
    assert out["flights"] == [{"flight_number": "HAT101", "origin": "JFK", "destination": "SFO",
                               "date": "2024-05-20", "price": 150}]
    assert out["payment_history"] == BOOKING["payment_methods"] and out["status"] is None
    mia = db["users"]["mia_park_2001"]
    assert "certificate_3333" not in mia["payment_methods"]  # used up whole
    assert mia["payment_methods"]["gift_card_2222"]["amount"] == 50 and mia["reservations"][-1] == "HATHAT"
    assert db["flights"]["HAT101"]["dates"]["2024-05-20"]["available_seats"] == {
        "basic_economy": 4, "economy": 8, "business": 2}
    assert db["reservations"]["HATHAT"] is not None
    # the next bookings take the next fixed ids, then there are none left
    two = {**BOOKING, "payment_methods": [{"payment_id": "credit_card_1111", "amount": 230}]}
    assert json.loads(run(kit, "book_reservation", **two))["reservation_id"] == "HATHAU"
    assert json.loads(run(kit, "book_reservation", **two))["reservation_id"] == "HATHAV"
    assert fails(kit, "book_reservation", **two) == "Error: Too many reservations"


@pytest.mark.parametrize(("change", "error"), [
    ({"payment_methods": [{"payment_id": "credit_card_1111", "amount": 200}]},
     "Payment amount does not add up, total price is 230, but paid 200"),
    ({"payment_methods": [{"payment_id": "gift_card_2222", "amount": 230}]},
     "Not enough balance in payment method gift_card_2222"),
    ({"payment_methods": [{"payment_id": "gift_card_5555", "amount": 230}]}, "Payment method gift_card_5555 not found"),
    ({"flights": [{"flight_number": "HAT103", "date": "2024-05-20"}]}, "Flight HAT103 not available on date 2024-05-20"),
    ({"flights": [{"flight_number": "HAT101", "date": "2024-06-01"}]}, "Flight HAT101 not found on date 2024-06-01"),
    ({"flights": [{"flight_number": "HAT999", "date": "2024-05-20"}]}, "Flight HAT999 not found"),
    ({"cabin": "business", "passengers": [MIA, JUN, LEO]}, "Not enough seats on flight HAT101"),
    ({"user_id": "nobody_0000"}, "User nobody_0000 not found"),
])
def test_a_refused_booking_says_why_and_changes_nothing(change: dict, error: str) -> None:
    kit, db = tools()
    assert fails(kit, "book_reservation", **{**BOOKING, **change}) == f"Error: {error}"
    assert db == DB


def test_arguments_are_checked_and_converted_as_the_benchmarks_argument_models_do() -> None:
    reference, _ = tools()
    run(reference, "book_reservation", **BOOKING)
    kit, db = tools()
    loose = {**BOOKING, "total_baggages": "4", "nonfree_baggages": 1.0, "note": "ignored",
             "flights": [{"flight_number": "HAT101", "date": "2024-05-20", "cabin": "ignored"}],
             "passengers": [{**MIA, "seat": "12A"}],
             "payment_methods": [{"payment_id": "certificate_3333", "amount": 150.0},
                                 {"payment_id": "gift_card_2222", "amount": "50"},
                                 {"payment_id": "credit_card_1111", "amount": " 30 "}]}
    run(kit, "book_reservation", **loose)
    assert tau2.canonical(db) == tau2.canonical(reference.db)  # the same database as the exact call
    kit, db = tools()
    for arguments, error in [
            ({k: v for k, v in BOOKING.items() if k != "insurance"}, "insurance: field required"),
            ({**BOOKING, "cabin": "first"}, "cabin: must be one of 'business', 'economy', 'basic_economy'"),
            ({**BOOKING, "nonfree_baggages": 1.5}, "nonfree_baggages: must be an integer"),
            ({**BOOKING, "user_id": 2001}, "user_id: must be a string"),
            ({**BOOKING, "flights": "HAT101"}, "flights: must be an array"),
            ({**BOOKING, "passengers": [{"first_name": "Mia", "last_name": "Park"}]}, "passengers[0].dob: field required"),
            ({**BOOKING, "payment_methods": [{"payment_id": "credit_card_1111", "amount": "lots"}]},
             "payment_methods[0].amount: must be an integer")]:
        assert error in fails(kit, "book_reservation", **arguments)
    assert db == DB


def test_cancelling_appends_the_reversed_payments_and_credits_no_balance() -> None:
    kit, db = tools()
    out = json.loads(run(kit, "cancel_reservation", reservation_id="RES002"))
    assert out["status"] == "cancelled"
    assert out["payment_history"] == [{"payment_id": "gift_card_2222", "amount": 60},
                                      {"payment_id": "credit_card_1111", "amount": 900},
                                      {"payment_id": "gift_card_2222", "amount": -60},
                                      {"payment_id": "credit_card_1111", "amount": -900}]
    assert db["users"]["mia_park_2001"]["payment_methods"]["gift_card_2222"]["amount"] == 100
    assert db["flights"] == DB["flights"]  # no seat released
    assert fails(kit, "cancel_reservation", reservation_id="NOPE00") == "Error: Reservation NOPE00 not found"


def test_changing_flights_charges_or_refunds_the_difference_on_one_method() -> None:
    kit, db = tools()
    out = json.loads(run(kit, "update_reservation_flights", **CHANGE))
    assert [(f["flight_number"], f["date"], f["price"]) for f in out["flights"]] == [
        ("HAT101", "2024-05-21", 170), ("HAT102", "2024-05-25", 140)]  # the kept return keeps its price
    assert out["payment_history"][-1] == {"payment_id": "gift_card_2222", "amount": 20}
    assert db["users"]["mia_park_2001"]["payment_methods"]["gift_card_2222"]["amount"] == 80
    assert db["flights"] == DB["flights"]  # a change takes no seat
    # a cheaper return: a refund (a negative payment) credited to the gift card
    out = json.loads(run(kit, "update_reservation_flights", **{**CHANGE, "flights": [
        CHANGE["flights"][0], {"flight_number": "HAT102", "date": "2024-05-26"}]}))
    assert out["payment_history"][-1] == {"payment_id": "gift_card_2222", "amount": -20}
    assert db["users"]["mia_park_2001"]["payment_methods"]["gift_card_2222"]["amount"] == 100
    # a cabin change re-prices every segment, even the kept ones
    out = json.loads(run(kit, "update_reservation_flights", **{**CHANGE, "cabin": "business", "flights": [
        CHANGE["flights"][0], {"flight_number": "HAT102", "date": "2024-05-26"}], "payment_id": "credit_card_1111"}))
    assert out["cabin"] == "business" and out["payment_history"][-1] == {"payment_id": "credit_card_1111",
                                                                         "amount": 450 + 380 - 170 - 120}
    kit, db = tools()
    assert fails(kit, "update_reservation_flights", **{**CHANGE, "payment_id": "certificate_3333"}) == \
        "Error: Certificate cannot be used to update reservation"
    assert fails(kit, "update_reservation_flights", **{**CHANGE, "cabin": "business", "flights": [
        {"flight_number": "HAT101", "date": "2024-05-20"}, {"flight_number": "HAT102", "date": "2024-05-25"}]}) == \
        "Error: Gift card balance is not enough"  # 420 + 390 - 290 = 520 against 100
    assert fails(kit, "update_reservation_flights", **{**CHANGE, "flights": [
        {"flight_number": "HAT103", "date": "2024-05-21"}, {"flight_number": "HAT102", "date": "2024-05-25"}],
        "cabin": "business"}) == "Error: Not enough seats on flight HAT103"
    assert db == DB


def test_baggage_and_passenger_updates() -> None:
    kit, db = tools()
    out = json.loads(run(kit, "update_reservation_baggages", **BAGS))
    assert (out["total_baggages"], out["nonfree_baggages"]) == (4, 2)
    assert out["payment_history"][-1] == {"payment_id": "credit_card_4444", "amount": 100}
    # fewer paid bags cost nothing (no payment recorded), but the method is still checked
    out = json.loads(run(kit, "update_reservation_baggages", **{**BAGS, "nonfree_baggages": 1}))
    assert out["nonfree_baggages"] == 1 and len(out["payment_history"]) == 2
    assert fails(kit, "update_reservation_baggages", **{**BAGS, "payment_id": "gift_card_2222"}) == \
        "Error: Payment method not found"
    assert fails(kit, "update_reservation_baggages", **{**BAGS, "nonfree_baggages": 4, "payment_id": "gift_card_5555"}) \
        == "Error: Gift card balance is not enough"
    out = json.loads(run(kit, "update_reservation_passengers", **RENAMED))
    assert out["passengers"][1] == {"first_name": "Anna", "last_name": "Ross", "dob": "1987-01-20"}
    assert fails(kit, "update_reservation_passengers", reservation_id="RES003", passengers=[LEO]) == \
        "Error: Number of passengers does not match"
    assert db["reservations"]["RES001"] == DB["reservations"]["RES001"]


def test_certificates_and_the_read_tools() -> None:
    kit, db = tools()
    assert run(kit, "send_certificate", user_id="leo_ross_3002", amount=100) == \
        "Certificate certificate_3221322 added to user leo_ross_3002 with amount 100."
    assert db["users"]["leo_ross_3002"]["payment_methods"]["certificate_3221322"] == {
        "id": "certificate_3221322", "amount": 100.0, "source": "certificate"}
    run(kit, "send_certificate", user_id="leo_ross_3002", amount=50)
    run(kit, "send_certificate", user_id="leo_ross_3002", amount=50)
    assert fails(kit, "send_certificate", user_id="leo_ross_3002", amount=50) == "Error: Too many certificates"
    kit, db = tools()
    assert run(kit, "get_flight_status", flight_number="HAT101", date="2024-05-10") == "landed"
    assert run(kit, "get_flight_status", flight_number="HAT103", date="2024-05-20") == "delayed"
    direct = json.loads(run(kit, "search_direct_flight", origin="JFK", destination="SFO", date="2024-05-20"))
    assert [f["flight_number"] for f in direct] == ["HAT101"]  # HAT103 is delayed that day
    assert direct[0]["prices"]["economy"] == 150 and direct[0]["date"] is None
    onestop = json.loads(run(kit, "search_onestop_flight", origin="JFK", destination="SFO", date="2024-05-20"))
    assert [[(f["flight_number"], f["date"]) for f in pair] for pair in onestop] == [
        [("HAT201", "2024-05-20"), ("HAT202", "2024-05-20")]]  # HAT203 leaves ORD before HAT201 lands
    overnight = json.loads(run(kit, "search_onestop_flight", origin="SFO", destination="BOS", date="2024-05-20"))
    assert [[(f["flight_number"], f["date"]) for f in pair] for pair in overnight] == [
        [("HAT301", "2024-05-20"), ("HAT302", "2024-05-21")]]  # the second leg the next day
    airports = json.loads(run(kit, "list_all_airports"))
    assert len(airports) == 20 and {"iata": "ORD", "city": "Chicago"} in airports
    assert json.loads(run(kit, "get_user_details", user_id="leo_ross_3002"))["membership"] == "regular"
    assert run(kit, "calculate", expression="(150 + 30) * 2") == "360.0"
    assert run(kit, "transfer_to_human_agents", summary="wants a refund") == "Transfer successful"
    assert db == DB


# -- through the harness --------------------------------------------------------------------------


def test_the_reference_answers_score_one_on_every_task_and_trial(domains: Path) -> None:
    result, agent, _ = play(domains, REFERENCE, size=2)
    assert [e.label for e in result.episodes] == [f"airline/{t['id']}" for t in TASKS for _ in range(2)]
    assert all(e.success and e.error is None and e.terminated for e in result.episodes), result.episodes
    column = result.columns["tau2-airline"]
    assert column.success_rate == 1.0 and column.tasks == len(TASKS) and not column.unavailable
    assert tau2.pass_hat_ks(result.episodes) == {"airline": {1: 1.0, 2: 1.0}}
    first = agent.calls[0][1]["content"]
    assert "Airline agent policy" in first and "update_reservation_flights" in first and "mia_park_2001" in first
    # the agent saw its tool results
    assert any('"reservation_id\\": \\"HATHAT\\"' in m["content"] for conv in agent.calls for m in conv)


def test_wrong_answers_score_zero(domains: Path) -> None:
    result, _, _ = play(domains, WRONG)
    assert [e.episode_return for e in result.episodes] == [0.0] * len(TASKS)
    assert all(e.terminated and e.error is None for e in result.episodes)
    assert result.columns["tau2-airline"].success_rate == 0.0
    # the score's components: the wrong flight fails DB, not ACTION on the calls it made before
    task = tau2.load_domain(domains / "airline")[2]
    env = tau2.Tau2Env(task, DB, POLICY, ReplayBackend(["hi", "hi"]))
    env.reset()
    for message in WRONG["2"][0][:2] + WRONG["2"][0][3:4]:
        env.step(message)
    assert env.score() == (0.0, {"DB": 0.0, "ACTION": 0.0})  # another flight: neither matches
    env.reset()
    for message in REFERENCE["2"][0][:2] + REFERENCE["2"][0][3:4]:
        env.step(message)
    assert env.score() == (1.0, {"DB": 1.0, "ACTION": 1.0})


def test_bad_calls_are_reported_to_the_agent_and_count_toward_max_errors(domains: Path) -> None:
    bad = [call("cancel_everything"),
           '<tool_call>{"name": "get_user_details", "arguments": </tool_call>',
           call("get_user_details"),
           call("send_certificate", user_id="leo_ross_3002", amount="a lot"),
           call("update_reservation_flights", **{**CHANGE, "cabin": "first"}),
           call("get_reservation_details", reservation_id="NOPE42"),
           call("update_reservation_baggages", **{**BAGS, "nonfree_baggages": 1.5}),
           call("book_reservation", **{**BOOKING, "payment_methods": []}),
           call("get_flight_status", flight_number="HAT101", date="2030-01-01"),
           call("cancel_everything")]
    assert len(bad) == tau2.MAX_ERRORS
    agent5, said5 = REFERENCE["5"]
    # one error short of the limit: the conversation goes on, and the task can still succeed
    result, agent, _ = play(domains, {"5": (bad[:-1] + agent5, said5)}, ids="5")
    assert [e.success for e in result.episodes] == [True]
    seen = [conv[-1]["content"] for conv in agent.calls[1:]]
    assert "Error: Tool 'cancel_everything' not found." in seen[0]
    assert "Could not parse your tool call" in seen[1]
    assert "Error: user_id: field required" in seen[2]
    assert "amount: must be an integer" in seen[3]
    assert "cabin: must be one of" in seen[4]
    assert "Error: Reservation NOPE42 not found" in seen[5]
    assert "nonfree_baggages: must be an integer" in seen[6]
    assert "Payment amount does not add up, total price is 230, but paid 0" in seen[7]
    assert "Flight HAT101 not found on date 2030-01-01" in seen[8]
    # the limit reached: the episode ends at once, prematurely, with reward 0
    result, _, _ = play(domains, {"5": (bad + agent5, said5)}, ids="5")
    (episode,) = result.episodes
    assert episode.turns == tau2.MAX_ERRORS and episode.terminated and episode.episode_return == 0.0
    assert episode.error is None


def test_one_episodes_database_never_leaks_into_another(domains: Path) -> None:
    # every trial books, cancels, changes, adds bags, renames, sends a certificate: any change
    # left in the next episode's database would fail its DB score (a second booking gets HATHAU)
    result, _, items = play(domains, REFERENCE, size=3)
    assert all(e.success for e in result.episodes), result.episodes
    assert json.loads((domains / "airline" / "db.json").read_text()) == DB
    env = items[0].make_env()
    assert env.base_db == DB  # the copy read once per domain is never written
    env.user_backend = ReplayBackend(["hi", "hi"])
    env.reset()
    env.step(call("book_reservation", **BOOKING))
    assert "HATHAT" in env._ep.db["reservations"] and "HATHAT" not in env.base_db["reservations"]
    env.reset()
    assert "HATHAT" not in env._ep.db["reservations"] and env._ep.db == DB


def test_spade_eval_prints_the_airline_column_and_its_pass_hat_k(domains: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPADE_HOME", str(tmp_path / "home"))
    agent, said = REFERENCE["5"]
    backends = {"agent": ReplayBackend(agent * 2, name="agent"), "user": ReplayBackend(said * 2, name="user")}
    import spade_eval.policy

    monkeypatch.setattr(spade_eval.policy, "make_backend", lambda spec, plugins: backends[spec.options["model"]])
    r = CliRunner().invoke(build_app(), [
        "eval", "--suite", "tau2_bench", "--policy", "openai:http://agent.invalid/v1#agent", "--size", "2",
        "--concurrency", "1", "-o", f"data={domains}", "-o", "domains=airline", "-o", "ids=5",
        "-o", "user=openai:http://user.invalid/v1#user"])
    assert r.exit_code == 0, r.output
    assert "tau2-airline: pass^1 100.0%, pass^2 100.0%" in r.output
    assert re.search(r"tau2-airline\W+100\.0%", r.output.split("tau2-airline: pass^1")[0])  # the columns table
