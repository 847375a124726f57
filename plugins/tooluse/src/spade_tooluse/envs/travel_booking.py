"""Flights, hotels and a trip budget: book the cheapest options and report what is left."""

from spade_tooluse.base import ToolEnv, ToolError, Turn, call, function_schema

CITIES = ["Lisbon", "Oslo", "Turin", "Krakow", "Ghent", "Porto", "Graz", "Malmo"]


class TravelBookingEnv(ToolEnv):
    description = "You are a travel agent assistant. Prices are whole euros; the traveller has a fixed trip budget."
    advance_on = "reply"
    MAX_NIGHTS = 4
    # what an edit may change (spade_designer.knobs): the longest hotel stay
    KNOBS = {"MAX_NIGHTS": (int, 2, 7)}
    tools = [
        function_schema(
            "search_flights", "Flights between two cities on a date (YYYY-MM-DD), with price and free seats.",
            {"origin": {"type": "string"}, "destination": {"type": "string"}, "date": {"type": "string"}},
            ["origin", "destination", "date"],
        ),
        function_schema("book_flight", "Book one seat on a flight; the price is taken from the budget.",
                        {"flight_id": {"type": "string"}}, ["flight_id"]),
        function_schema(
            "search_hotels", "Hotels in a city, optionally only those at or under a nightly price.",
            {"city": {"type": "string"}, "max_nightly": {"type": "integer"}}, ["city"],
        ),
        function_schema(
            "book_hotel", "Book a hotel for a number of nights; nightly price times nights is taken from the budget.",
            {"hotel_id": {"type": "string"}, "nights": {"type": "integer"}}, ["hotel_id", "nights"],
        ),
        function_schema("get_budget", "The remaining trip budget."),
    ]

    def build(self):
        rng = self.rng
        origin, dest = rng.sample(CITIES, 2)
        day = 10 + rng.randint(0, 15)
        date = "2025-06-" + str(day)
        flights = {}
        for n in range(5):
            fid = "FL" + str(100 + n * 7 + rng.randint(0, 6))
            same = n < 3
            flights[fid] = {
                "origin": origin, "destination": dest if same or n == 3 else origin,
                "date": date if same else "2025-06-" + str(day + 1),
                "price": rng.randint(80, 300), "seats": rng.randint(1, 9),
            }
            if not same and n == 4:
                flights[fid]["origin"] = dest
        ours = {k: v for k, v in flights.items() if v["origin"] == origin and v["destination"] == dest and v["date"] == date}
        cheapest = min(sorted(ours), key=lambda k: ours[k]["price"])
        hotels = {}
        for n in range(4):
            hid = "HT" + str(10 + n)
            hotels[hid] = {"city": dest if n < 3 else origin, "nightly": 60 + 15 * n + rng.randint(0, 10), "rooms": 3}
        nights = rng.randint(2, self.MAX_NIGHTS)
        flight_price = flights[cheapest]["price"]
        in_dest = {k: v for k, v in hotels.items() if v["city"] == dest}
        hotel = min(sorted(in_dest), key=lambda k: in_dest[k]["nightly"])
        budget = flight_price + hotels[hotel]["nightly"] * nights + rng.randint(50, 200)
        self.state = {"flights": flights, "hotels": hotels, "budget": budget, "bookings": []}
        left = budget - flight_price - hotels[hotel]["nightly"] * nights
        return [
            Turn(
                user="Book me the cheapest flight from " + origin + " to " + dest + " on " + date + ".",
                calls=[call("search_flights", origin=origin, destination=dest, date=date), call("book_flight", flight_id=cheapest)],
            ),
            Turn(
                user="Now book the cheapest hotel in " + dest + " for " + str(nights) + " nights.",
                calls=[call("search_hotels", city=dest), call("book_hotel", hotel_id=hotel, nights=nights)],
            ),
            Turn(
                user="How many euros of my budget are left? Answer with the number.",
                calls=[call("get_budget")],
                outputs=[str(left)],
            ),
        ]

    def tool_search_flights(self, origin, destination, date):
        return [
            {"flight_id": k, "price": v["price"], "seats": v["seats"]}
            for k, v in sorted(self.state["flights"].items())
            if v["origin"].lower() == origin.lower() and v["destination"].lower() == destination.lower() and v["date"] == date
        ]

    def tool_book_flight(self, flight_id):
        flight = self.state["flights"].get(flight_id)
        if flight is None:
            raise ToolError("no flight " + flight_id)
        if flight["seats"] < 1:
            raise ToolError("flight " + flight_id + " is full")
        if flight["price"] > self.state["budget"]:
            raise ToolError("not enough budget")
        flight["seats"] -= 1
        self.state["budget"] -= flight["price"]
        self.state["bookings"].append({"kind": "flight", "id": flight_id})
        return {"booked": flight_id, "budget_left": self.state["budget"]}

    def tool_search_hotels(self, city, max_nightly=None):
        return [
            {"hotel_id": k, "nightly": v["nightly"], "rooms": v["rooms"]}
            for k, v in sorted(self.state["hotels"].items())
            if v["city"].lower() == city.lower() and (max_nightly is None or v["nightly"] <= max_nightly)
        ]

    def tool_book_hotel(self, hotel_id, nights):
        hotel = self.state["hotels"].get(hotel_id)
        if hotel is None:
            raise ToolError("no hotel " + hotel_id)
        if nights < 1:
            raise ToolError("nights must be at least 1")
        cost = hotel["nightly"] * nights
        if cost > self.state["budget"]:
            raise ToolError("not enough budget: the stay costs " + str(cost))
        hotel["rooms"] -= 1
        self.state["budget"] -= cost
        self.state["bookings"].append({"kind": "hotel", "id": hotel_id, "nights": nights})
        return {"booked": hotel_id, "cost": cost, "budget_left": self.state["budget"]}

    def tool_get_budget(self):
        return {"budget_left": self.state["budget"]}
