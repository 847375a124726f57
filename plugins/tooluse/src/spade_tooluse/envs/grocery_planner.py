"""Meal planning: scale recipes, subtract the pantry, fill a cart, check out."""

from spade_tooluse.base import ToolEnv, ToolError, Turn, call, function_schema

RECIPES = {
    "pancakes": {"flour": 2, "eggs": 2, "milk": 3},
    "omelette": {"eggs": 3, "cheese": 1, "butter": 1},
    "pasta bake": {"pasta": 2, "cheese": 2, "tomatoes": 3},
    "tomato soup": {"tomatoes": 4, "butter": 1, "onions": 1},
}


class GroceryPlannerEnv(ToolEnv):
    description = "You plan meals. Recipe quantities are per serving; buy only what the pantry lacks."
    advance_on = "reply"
    MAX_SERVINGS = 4
    # what an edit may change (spade_designer.knobs): the most servings of the first recipe
    KNOBS = {"MAX_SERVINGS": (int, 2, 6)}
    tools = [
        function_schema("get_recipe", "Ingredients per serving of a recipe.", {"name": {"type": "string"}}, ["name"]),
        function_schema("check_pantry", "Units of every ingredient at home."),
        function_schema("add_to_cart", "Add units of an ingredient to the cart.",
                        {"ingredient": {"type": "string"}, "quantity": {"type": "integer"}}, ["ingredient", "quantity"]),
        function_schema("view_cart", "The cart."),
        function_schema("checkout", "Buy everything in the cart; the units go to the pantry. Returns the order id."),
    ]

    def build(self):
        rng = self.rng
        first, second = rng.sample(sorted(RECIPES), 2)
        servings = rng.randint(2, self.MAX_SERVINGS)
        pantry = {i: rng.randint(0, 5) for r in RECIPES.values() for i in r}
        need1 = {i: max(0, q * servings - pantry[i]) for i, q in sorted(RECIPES[first].items())}
        after1 = dict(pantry)
        need2 = {}
        for i, q in sorted(RECIPES[second].items()):
            have = after1[i] + need1.get(i, 0) - RECIPES[first].get(i, 0) * servings
            need2[i] = max(0, q * 2 - have)
        self.state = {"pantry": pantry, "cart": {}, "orders": 0}
        cart_total = {}
        for d in (need1, need2):
            for i, q in d.items():
                if q:
                    cart_total[i] = cart_total.get(i, 0) + q
        return [
            Turn(
                user="I'm making " + first + " for " + str(servings) + ". Put whatever I'm missing in the cart.",
                calls=[call("get_recipe", name=first), call("check_pantry")]
                + [call("add_to_cart", ingredient=i, quantity=q) for i, q in need1.items() if q],
            ),
            Turn(
                user="Later I'll also make " + second + " for 2, using what is left after the " + first
                + ". Add what's missing for that too.",
                calls=[call("get_recipe", name=second)] + [call("add_to_cart", ingredient=i, quantity=q) for i, q in need2.items() if q],
            ),
            Turn(
                user="Check out. How many units are in the order in total? Answer with the number.",
                calls=[call("checkout")],
                outputs=[str(sum(cart_total.values()))],
            ),
        ]

    def tool_get_recipe(self, name):
        recipe = RECIPES.get(name.lower())
        if recipe is None:
            raise ToolError("no recipe " + name + "; recipes: " + ", ".join(sorted(RECIPES)))
        return recipe

    def tool_check_pantry(self):
        return self.state["pantry"]

    def tool_add_to_cart(self, ingredient, quantity):
        if ingredient not in self.state["pantry"]:
            raise ToolError("the shop does not sell " + ingredient)
        if quantity < 1:
            raise ToolError("quantity must be positive")
        cart = self.state["cart"]
        cart[ingredient] = cart.get(ingredient, 0) + quantity
        return cart

    def tool_view_cart(self):
        return self.state["cart"]

    def tool_checkout(self):
        cart = self.state["cart"]
        if not cart:
            raise ToolError("the cart is empty")
        units = sum(cart.values())
        for i, q in cart.items():
            self.state["pantry"][i] += q
        self.state["cart"] = {}
        self.state["orders"] += 1
        return {"order_id": "G" + str(self.state["orders"]), "units": units}
