"""A sales spreadsheet: filter rows, sum a column, find a best seller, flag a row."""

from spade_tooluse.base import ToolEnv, ToolError, Turn, call, function_schema

REGIONS = ["north", "south", "east", "west"]
PRODUCTS = ["alpha", "beta", "gamma", "delta", "omega"]
MONTHS = ["jan", "feb", "mar"]
COLUMNS = ["region", "product", "month", "units", "revenue"]


class SalesTableEnv(ToolEnv):
    description = "You answer questions about a sales table (columns: row_id, region, product, month, units, revenue)."
    advance_on = "check"
    ROWS = 30
    # what an edit may change (spade_designer.knobs): rows in the table
    KNOBS = {"ROWS": (int, 12, 60)}
    HARDER = {"ROWS": "higher"}
    tools = [
        function_schema(
            "filter_rows", "Rows whose column equals the value (text columns only).",
            {"column": {"type": "string", "enum": ["region", "product", "month"]}, "value": {"type": "string"}},
            ["column", "value"],
        ),
        function_schema(
            "sum_column", "Sum of a numeric column over the given row ids.",
            {"row_ids": {"type": "array", "items": {"type": "integer"}}, "column": {"type": "string", "enum": ["units", "revenue"]}},
            ["row_ids", "column"],
        ),
        function_schema("get_row", "One row by id.", {"row_id": {"type": "integer"}}, ["row_id"]),
        function_schema("flag_row", "Mark a row for review.", {"row_id": {"type": "integer"}}, ["row_id"]),
    ]

    def build(self):
        rng = self.rng
        rows = []
        units_pool = rng.sample(range(5, 400), 60)
        for n in range(self.ROWS):
            units = units_pool[n]
            rows.append({"row_id": n + 1, "region": rng.choice(REGIONS), "product": rng.choice(PRODUCTS),
                         "month": MONTHS[n % 3], "units": units, "revenue": units * rng.randint(3, 12)})
        region = rng.choice(sorted({r["region"] for r in rows}))
        in_region = [r for r in rows if r["region"] == region]
        total = sum(r["revenue"] for r in in_region)
        month = rng.choice(MONTHS)
        in_month = [r for r in rows if r["month"] == month]
        best = max(in_month, key=lambda r: r["units"])
        top = max(in_region, key=lambda r: (r["revenue"], -r["row_id"]))
        self.state = {"rows": rows, "flagged": []}
        ids = [r["row_id"] for r in in_region]
        return [
            Turn(
                user="What is the total revenue of the " + region + " region? Answer with the number.",
                calls=[call("filter_rows", column="region", value=region), call("sum_column", row_ids=ids, column="revenue")],
                outputs=[str(total)],
            ),
            Turn(
                user="In " + month + ", which row sold the most units? Tell me its product.",
                calls=[call("filter_rows", column="month", value=month)],
                outputs=[best["product"]],
            ),
            Turn(
                user="Flag the row with the highest revenue in the " + region + " region (lowest row id on a tie).",
                calls=[call("flag_row", row_id=top["row_id"])],
            ),
        ]

    def _row(self, row_id):
        for r in self.state["rows"]:
            if r["row_id"] == row_id:
                return r
        raise ToolError("no row " + str(row_id))

    def tool_filter_rows(self, column, value):
        return [r for r in self.state["rows"] if str(r[column]).lower() == value.lower()]

    def tool_sum_column(self, row_ids, column):
        return {"column": column, "sum": sum(self._row(int(i))[column] for i in row_ids)}

    def tool_get_row(self, row_id):
        return self._row(row_id)

    def tool_flag_row(self, row_id):
        self._row(row_id)
        if row_id in self.state["flagged"]:
            raise ToolError("row " + str(row_id) + " is already flagged")
        self.state["flagged"].append(row_id)
        return {"flagged": row_id}
