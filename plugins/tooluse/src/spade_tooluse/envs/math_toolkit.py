"""A calculator with many operations and a memory: pick the right operation each time."""

from spade_tooluse.base import ToolEnv, ToolError, Turn, call, function_schema

NUM = {"type": "number"}


class MathToolkitEnv(ToolEnv):
    description = "You have calculator tools and a named memory. Store exactly the values the tools return."
    advance_on = "check"
    MAX_NUMBERS = 7
    # what an edit may change (spade_designer.knobs): the longest list to average (at least five numbers)
    KNOBS = {"MAX_NUMBERS": (int, 5, 12)}
    HARDER = {"MAX_NUMBERS": "higher"}
    tools = [
        function_schema("add", "a + b.", {"a": NUM, "b": NUM}, ["a", "b"]),
        function_schema("multiply", "a * b.", {"a": NUM, "b": NUM}, ["a", "b"]),
        function_schema("power", "base ** exponent.", {"base": NUM, "exponent": NUM}, ["base", "exponent"]),
        function_schema("square_root", "Square root of x.", {"x": NUM}, ["x"]),
        function_schema("mean", "Arithmetic mean of numbers.", {"numbers": {"type": "array", "items": NUM}}, ["numbers"]),
        function_schema("median", "Median of numbers.", {"numbers": {"type": "array", "items": NUM}}, ["numbers"]),
        function_schema("percent_change", "value increased by percent (negative to decrease).", {"value": NUM, "percent": NUM},
                        ["value", "percent"]),
        function_schema("store", "Save a value in memory under a name.", {"name": {"type": "string"}, "value": NUM}, ["name", "value"]),
        function_schema("recall", "Read a value from memory.", {"name": {"type": "string"}}, ["name"]),
    ]

    def build(self):
        rng = self.rng
        numbers = [rng.randint(10, 99) for _ in range(rng.choice(range(5, self.MAX_NUMBERS + 1)))]
        avg = round(sum(numbers) / len(numbers), 4)
        pct = rng.choice([5, 10, 12.5, 20, -15])
        grown = round(avg * (1 + pct / 100), 4)
        root = rng.randint(12, 40)
        self.state = {"memory": {}}
        return [
            Turn(user="Compute the mean of " + str(numbers) + " and store it as 'avg'.",
                 calls=[call("mean", numbers=numbers), call("store", name="avg", value=avg)]),
            Turn(user="Store 'target' as avg changed by " + str(pct) + " percent.",
                 calls=[call("recall", name="avg"), call("percent_change", value=avg, percent=pct), call("store", name="target", value=grown)]),
            Turn(user="What is the square root of " + str(root * root) + "? Store it as 'side' and tell me.",
                 calls=[call("square_root", x=root * root), call("store", name="side", value=float(root))],
                 outputs=[str(root)]),
        ]

    def tool_add(self, a, b):
        return round(a + b, 4)

    def tool_multiply(self, a, b):
        return round(a * b, 4)

    def tool_power(self, base, exponent):
        if abs(exponent) > 64:
            raise ToolError("exponent too large")
        return round(float(base) ** exponent, 4)

    def tool_square_root(self, x):
        if x < 0:
            raise ToolError("square root of a negative number")
        return round(x ** 0.5, 4)

    def tool_mean(self, numbers):
        if not numbers:
            raise ToolError("no numbers")
        return round(sum(numbers) / len(numbers), 4)

    def tool_median(self, numbers):
        if not numbers:
            raise ToolError("no numbers")
        s = sorted(numbers)
        mid = len(s) // 2
        return s[mid] if len(s) % 2 else round((s[mid - 1] + s[mid]) / 2, 4)

    def tool_percent_change(self, value, percent):
        return round(value * (1 + percent / 100), 4)

    def tool_store(self, name, value):
        self.state["memory"][name] = float(value)
        return {"stored": name}

    def tool_recall(self, name):
        if name not in self.state["memory"]:
            raise ToolError("nothing stored as " + name)
        return self.state["memory"][name]
