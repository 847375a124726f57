"""An online shop back office: find a product, order it, take payment, ship it."""

from spade_tooluse.base import ToolEnv, ToolError, Turn, call, function_schema

PRODUCTS = ["desk lamp", "office chair", "monitor arm", "usb hub", "keyboard", "webcam", "headset", "mouse pad"]
CARRIERS = ["DHL", "UPS", "FedEx"]


class OrderFulfillmentEnv(ToolEnv):
    description = "You operate an online shop's order system. Orders must be paid before they ship."
    advance_on = "check"
    PRODUCTS_LISTED = 5
    # what an edit may change (spade_designer.knobs): products in the inventory
    KNOBS = {"PRODUCTS_LISTED": (int, 2, 8)}
    HARDER = {"PRODUCTS_LISTED": "higher"}
    tools = [
        function_schema("find_product", "Products whose name contains the query.", {"query": {"type": "string"}}, ["query"]),
        function_schema("check_stock", "Units in stock for a SKU.", {"sku": {"type": "string"}}, ["sku"]),
        function_schema(
            "create_order", "Create an order; reserves the units from stock. Returns the order id.",
            {"customer": {"type": "string"}, "sku": {"type": "string"}, "quantity": {"type": "integer"}},
            ["customer", "sku", "quantity"],
        ),
        function_schema("pay_order", "Charge the customer for an order.", {"order_id": {"type": "string"}}, ["order_id"]),
        function_schema(
            "ship_order", "Hand a paid order to a carrier.",
            {"order_id": {"type": "string"}, "carrier": {"type": "string", "enum": CARRIERS}}, ["order_id", "carrier"],
        ),
    ]

    def build(self):
        rng = self.rng
        names = rng.sample(PRODUCTS, self.PRODUCTS_LISTED)
        inventory = {}
        for n, name in enumerate(names):
            inventory["SKU-" + str(rng.randint(100, 999)) + str(n)] = {"name": name, "stock": rng.randint(5, 40), "price": rng.randint(9, 199)}
        sku = sorted(inventory)[rng.randrange(self.PRODUCTS_LISTED)]
        product = inventory[sku]
        qty = rng.randint(1, min(4, product["stock"]))
        customer = rng.choice(["Nadia Osei", "Tom Kask", "Lena Brun", "Ravi Menon"])
        carrier = rng.choice(CARRIERS)
        self.state = {"inventory": inventory, "orders": {}, "next_order": 1}
        return [
            Turn(
                user=customer + " wants " + str(qty) + " x " + product["name"] + ". Create the order.",
                calls=[call("find_product", query=product["name"]), call("create_order", customer=customer, sku=sku, quantity=qty)],
            ),
            Turn(
                user="Take the payment for that order and ship it with " + carrier + ".",
                calls=[call("pay_order", order_id="ORD-1"), call("ship_order", order_id="ORD-1", carrier=carrier)],
            ),
            Turn(
                user="How many units of " + product["name"] + " are left in stock? Answer with the number.",
                calls=[call("check_stock", sku=sku)],
                outputs=[str(product["stock"] - qty)],
            ),
        ]

    def _order(self, order_id):
        order = self.state["orders"].get(order_id)
        if order is None:
            raise ToolError("no order " + order_id)
        return order

    def tool_find_product(self, query):
        q = query.lower()
        return [{"sku": k, "name": v["name"], "price": v["price"]} for k, v in sorted(self.state["inventory"].items()) if q in v["name"]]

    def tool_check_stock(self, sku):
        if sku not in self.state["inventory"]:
            raise ToolError("unknown sku " + sku)
        return {"sku": sku, "stock": self.state["inventory"][sku]["stock"]}

    def tool_create_order(self, customer, sku, quantity):
        item = self.state["inventory"].get(sku)
        if item is None:
            raise ToolError("unknown sku " + sku)
        if quantity < 1 or quantity > item["stock"]:
            raise ToolError("cannot order " + str(quantity) + " units; " + str(item["stock"]) + " in stock")
        order_id = "ORD-" + str(self.state["next_order"])
        self.state["next_order"] += 1
        item["stock"] -= quantity
        self.state["orders"][order_id] = {"customer": customer, "sku": sku, "quantity": quantity, "status": "created", "carrier": None}
        return {"order_id": order_id, "total": item["price"] * quantity}

    def tool_pay_order(self, order_id):
        order = self._order(order_id)
        if order["status"] != "created":
            raise ToolError("order " + order_id + " is already " + order["status"])
        order["status"] = "paid"
        return {"order_id": order_id, "status": "paid"}

    def tool_ship_order(self, order_id, carrier):
        order = self._order(order_id)
        if order["status"] != "paid":
            raise ToolError("order " + order_id + " must be paid before shipping (status: " + order["status"] + ")")
        order["status"] = "shipped"
        order["carrier"] = carrier
        return {"order_id": order_id, "status": "shipped", "carrier": carrier}
