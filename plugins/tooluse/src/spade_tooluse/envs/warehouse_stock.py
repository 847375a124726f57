"""Warehouse reservations: a request one site cannot cover must be split across sites."""

from spade_tooluse.base import ToolEnv, ToolError, Turn, call, function_schema

SITES = ["rotterdam", "lyon", "poznan", "bilbao"]
ITEMS = ["pallet jack", "steel shelf", "safety helmet", "forklift battery", "cable reel"]


class WarehouseStockEnv(ToolEnv):
    description = "You reserve stock across warehouses for customer orders."
    advance_on = "check"
    MAX_ON_HAND = 20
    # what an edit may change (spade_designer.knobs): the most units of the item at the first warehouse
    KNOBS = {"MAX_ON_HAND": (int, 4, 40)}
    tools = [
        function_schema("stock_levels", "Free units of an item at every warehouse.", {"item": {"type": "string"}}, ["item"]),
        function_schema(
            "reserve", "Reserve units of an item at one warehouse. Returns the reservation id.",
            {"warehouse": {"type": "string"}, "item": {"type": "string"}, "quantity": {"type": "integer"}},
            ["warehouse", "item", "quantity"],
        ),
        function_schema("cancel_reservation", "Cancel a reservation and free its units.",
                        {"reservation_id": {"type": "string"}}, ["reservation_id"]),
        function_schema("list_reservations", "Every active reservation."),
    ]

    def build(self):
        rng = self.rng
        item = rng.choice(ITEMS)
        sites = rng.sample(SITES, 4)
        first, richest, swap_to, last = sites
        stock = {s: {i: rng.randint(0, 9) for i in ITEMS} for s in sites}
        have = rng.randint(4, self.MAX_ON_HAND)
        ask = have + rng.randint(2, 6)
        stock[first][item] = have
        stock[swap_to][item] = have + rng.randint(0, 3)
        stock[last][item] = rng.randint(0, 3)
        # strictly the most of all, so "the warehouse with the most" is unambiguous
        stock[richest][item] = max(have + 3, ask - have, stock[swap_to][item]) + rng.randint(1, 5)
        total = sum(stock[s][item] for s in sites)
        self.state = {"stock": stock, "reservations": {}, "next_id": 1}
        return [
            Turn(
                user="Reserve " + str(ask) + " units of " + item + " from " + first + ". If " + first
                + " cannot cover it all, reserve what it has and take the rest from the warehouse with the most " + item + ".",
                calls=[call("stock_levels", item=item), call("reserve", warehouse=first, item=item, quantity=have),
                       call("reserve", warehouse=richest, item=item, quantity=ask - have)],
            ),
            Turn(
                user="Actually cancel the " + first + " part and reserve those " + str(have) + " units at " + swap_to + " instead.",
                calls=[call("cancel_reservation", reservation_id="R1"), call("reserve", warehouse=swap_to, item=item, quantity=have)],
            ),
            Turn(
                user="How many free units of " + item + " are left across all warehouses? Answer with the number.",
                calls=[call("stock_levels", item=item)],
                outputs=[str(total - ask)],
            ),
        ]

    def tool_stock_levels(self, item):
        return {s: levels.get(item, 0) for s, levels in sorted(self.state["stock"].items())}

    def tool_reserve(self, warehouse, item, quantity):
        site = self.state["stock"].get(warehouse)
        if site is None:
            raise ToolError("unknown warehouse " + warehouse)
        if quantity < 1:
            raise ToolError("quantity must be positive")
        free = site.get(item, 0)
        if quantity > free:
            raise ToolError("only " + str(free) + " units of " + item + " free at " + warehouse)
        site[item] = free - quantity
        rid = "R" + str(self.state["next_id"])
        self.state["next_id"] += 1
        self.state["reservations"][rid] = {"warehouse": warehouse, "item": item, "quantity": quantity}
        return {"reservation_id": rid}

    def tool_cancel_reservation(self, reservation_id):
        r = self.state["reservations"].pop(reservation_id, None)
        if r is None:
            raise ToolError("no reservation " + reservation_id)
        self.state["stock"][r["warehouse"]][r["item"]] += r["quantity"]
        return {"cancelled": reservation_id}

    def tool_list_reservations(self):
        return self.state["reservations"]
