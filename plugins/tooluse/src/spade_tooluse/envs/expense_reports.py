"""Expense reports: create, fill within policy limits, submit, approve."""

from spade_tooluse.base import ToolEnv, ToolError, Turn, call, function_schema

CATEGORIES = ["travel", "meals", "lodging", "supplies"]
PEOPLE = ["Asha", "Bruno", "Cleo", "Dario", "Elif"]


class ExpenseReportsEnv(ToolEnv):
    description = "You handle expense reports. Items over the category limit are refused; reports go draft -> submitted -> approved."
    advance_on = "check"
    ITEMS = 3
    # what an edit may change (spade_designer.knobs): items on the first request
    KNOBS = {"ITEMS": (int, 1, 4)}
    HARDER = {"ITEMS": "higher"}
    tools = [
        function_schema("get_policy", "Per-item limit of every category."),
        function_schema("create_report", "Start a draft report for an employee. Returns the report id.",
                        {"employee": {"type": "string"}}, ["employee"]),
        function_schema(
            "add_item", "Add an item to a draft report.",
            {"report_id": {"type": "string"}, "category": {"type": "string", "enum": CATEGORIES}, "amount": {"type": "integer"}},
            ["report_id", "category", "amount"],
        ),
        function_schema("submit_report", "Submit a draft report with at least one item.", {"report_id": {"type": "string"}}, ["report_id"]),
        function_schema("approve_report", "Approve a submitted report.", {"report_id": {"type": "string"}}, ["report_id"]),
        function_schema("get_report", "A report with its items and total.", {"report_id": {"type": "string"}}, ["report_id"]),
    ]

    def build(self):
        rng = self.rng
        policy = {c: rng.choice([80, 120, 200, 300]) for c in CATEGORIES}
        employee = rng.choice(PEOPLE)
        cats = rng.sample(CATEGORIES, self.ITEMS)
        items = [(c, rng.randint(10, policy[c])) for c in cats]
        over_cat = cats[0]
        over = policy[over_cat] + rng.randint(5, 50)
        total = sum(a for _, a in items)
        rid = "EXP-1"
        self.state = {"policy": policy, "reports": {}, "next_id": 1}
        listing = ", ".join(c + " " + str(a) for c, a in items)
        return [
            Turn(
                user="Create an expense report for " + employee + " with these items: " + listing + ".",
                calls=[call("create_report", employee=employee)] + [call("add_item", report_id=rid, category=c, amount=a) for c, a in items],
            ),
            Turn(
                user="Also add " + over_cat + " " + str(over) + ". If policy refuses it, add it capped at the limit instead. Then submit the report.",
                calls=[call("get_policy"), call("add_item", report_id=rid, category=over_cat, amount=policy[over_cat]),
                       call("submit_report", report_id=rid)],
            ),
            Turn(
                user="Approve it and tell me the report's total. Answer with the number.",
                calls=[call("approve_report", report_id=rid)],
                outputs=[str(total + policy[over_cat])],
            ),
        ]

    def _report(self, report_id):
        r = self.state["reports"].get(report_id)
        if r is None:
            raise ToolError("no report " + report_id)
        return r

    def tool_get_policy(self):
        return self.state["policy"]

    def tool_create_report(self, employee):
        rid = "EXP-" + str(self.state["next_id"])
        self.state["next_id"] += 1
        self.state["reports"][rid] = {"employee": employee, "items": [], "status": "draft"}
        return {"report_id": rid}

    def tool_add_item(self, report_id, category, amount):
        r = self._report(report_id)
        if r["status"] != "draft":
            raise ToolError("report " + report_id + " is " + r["status"] + "; only drafts take items")
        if amount <= 0:
            raise ToolError("amount must be positive")
        limit = self.state["policy"][category]
        if amount > limit:
            raise ToolError("refused: " + category + " items are limited to " + str(limit))
        r["items"].append([category, amount])
        return {"report_id": report_id, "items": len(r["items"])}

    def tool_submit_report(self, report_id):
        r = self._report(report_id)
        if r["status"] != "draft" or not r["items"]:
            raise ToolError("only a draft with items can be submitted")
        r["status"] = "submitted"
        return {"report_id": report_id, "status": "submitted"}

    def tool_approve_report(self, report_id):
        r = self._report(report_id)
        if r["status"] != "submitted":
            raise ToolError("report " + report_id + " is " + r["status"] + ", not submitted")
        r["status"] = "approved"
        return {"report_id": report_id, "status": "approved", "total": sum(a for _, a in r["items"])}

    def tool_get_report(self, report_id):
        r = self._report(report_id)
        return dict(r, report_id=report_id, total=sum(a for _, a in r["items"]))
