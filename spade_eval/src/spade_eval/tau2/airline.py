"""The airline domain's tools, on an in-memory copy of its database."""

from __future__ import annotations

import copy
from typing import Any

from ._common import INTEGER as _I
from ._common import STRING as _S
from ._common import SharedTools, Tau2DataError
from ._common import conform as _conform
from ._common import declare as _fn

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


class AirlineTools(SharedTools):
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
