"""ACEBench's airline class, in memory: ``Travel`` (``users``, ``reservations``; three users,
eleven flights, four reservations; "now" is 2024-07-14 06:00), with every public function of
the benchmark's class: ``get_flight_details``, ``get_user_details``,
``get_reservation_details``, ``authenticate_user``, ``get_baggage_allowance``,
``find_transfer_flights``, ``calculate_baggage_fee``, ``update_balance``, ``reserve_flight``,
``modify_flight``, ``cancel_reservation`` (refunds to cash, keeps the reservation),
``process_refund``, ``calculate_price_difference``. Its starting data is
``data/acebench_defaults.json``'s, as the phone classes' (:mod:`spade_eval.acebench_apis`).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from .acebench_apis import AceApi, Episode, default_state

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


class Travel(AceApi):
    """The airline class. Its answers are mostly plain text; where the benchmark's code fails
    (a booking with a wrong password or an unknown flight, an unknown cabin), the same lookup
    fails here, so the agent gets the same execution error."""

    NAME = "Travel"
    SAVED = ("users", "reservations")
    TOOLS = ("get_flight_details", "get_user_details", "get_reservation_details", "authenticate_user",
             "get_baggage_allowance", "find_transfer_flights", "calculate_baggage_fee", "update_balance",
             "reserve_flight", "modify_flight", "cancel_reservation", "process_refund", "calculate_price_difference")

    def __init__(self, episode: Episode) -> None:
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
