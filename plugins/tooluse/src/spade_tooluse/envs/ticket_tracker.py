"""An issue tracker: triage high-priority tickets, close one, re-prioritise another team's."""

from spade_tooluse.base import ToolEnv, ToolError, Turn, call, function_schema

USERS = ["kim", "lars", "mona", "nico"]
SUBJECTS = ["Login fails", "Slow search", "Broken export", "Typo on home page", "Crash on upload", "Wrong totals",
            "Missing icons", "Timeout on save", "Email not sent", "Dark mode glitch"]


class TicketTrackerEnv(ToolEnv):
    description = "You triage tickets in an issue tracker. Statuses: open, in_progress, closed. Priorities: low, medium, high."
    advance_on = "check"
    TICKETS = 8
    # what an edit may change (spade_designer.knobs): tickets in the tracker (T-102, the third, is the first request's)
    KNOBS = {"TICKETS": (int, 3, 10)}
    HARDER = {"TICKETS": "higher"}
    tools = [
        function_schema(
            "search_tickets", "Tickets filtered by status, priority and/or assignee (all optional).",
            {"status": {"type": "string"}, "priority": {"type": "string"}, "assignee": {"type": "string"}},
        ),
        function_schema("get_ticket", "One ticket.", {"ticket_id": {"type": "string"}}, ["ticket_id"]),
        function_schema(
            "update_ticket", "Change a ticket's status, priority and/or assignee.",
            {
                "ticket_id": {"type": "string"},
                "status": {"type": "string", "enum": ["open", "in_progress", "closed"]},
                "priority": {"type": "string", "enum": ["low", "medium", "high"]},
                "assignee": {"type": "string"},
            },
            ["ticket_id"],
        ),
    ]

    def build(self):
        rng = self.rng
        tickets = {}
        for n, subject in enumerate(rng.sample(SUBJECTS, self.TICKETS)):
            tickets["T-" + str(100 + n)] = {
                "subject": subject, "status": rng.choice(["open", "open", "in_progress", "closed"]),
                "priority": ["low", "medium", "high"][n % 3], "assignee": rng.choice(USERS + [None]),
            }
        tickets["T-102"]["status"] = "open"  # T-102 is high priority: the first request is never empty
        owner = rng.choice(USERS)
        targets = sorted(k for k, t in tickets.items() if t["status"] == "open" and t["priority"] == "high")
        to_close = rng.choice(sorted(k for k in tickets if tickets[k]["status"] != "closed" and k not in targets) or ["T-100"])
        other = rng.choice([u for u in USERS if u != owner])
        theirs = sorted(k for k, t in tickets.items() if t["assignee"] == other and t["status"] != "closed" and k != to_close and k not in targets)
        self.state = {"tickets": tickets}
        turns = [
            Turn(
                user="Assign every open high-priority ticket to " + owner + " and mark it in progress.",
                calls=[call("search_tickets", status="open", priority="high")]
                + [call("update_ticket", ticket_id=k, assignee=owner, status="in_progress") for k in targets],
            ),
            Turn(
                user="Close the ticket about '" + tickets[to_close]["subject"] + "'.",
                calls=[call("search_tickets")] + [call("update_ticket", ticket_id=to_close, status="closed")],
            ),
            Turn(
                user="Set every ticket assigned to " + other + " that is not closed to low priority. How many was that? Answer with the number.",
                calls=[call("search_tickets", assignee=other)] + [call("update_ticket", ticket_id=k, priority="low") for k in theirs],
                outputs=[str(len(theirs))],
            ),
        ]
        return turns

    def _ticket(self, ticket_id):
        t = self.state["tickets"].get(ticket_id)
        if t is None:
            raise ToolError("no ticket " + ticket_id)
        return t

    def tool_search_tickets(self, status=None, priority=None, assignee=None):
        out = []
        for k, t in sorted(self.state["tickets"].items()):
            if status is not None and t["status"] != status:
                continue
            if priority is not None and t["priority"] != priority:
                continue
            if assignee is not None and t["assignee"] != assignee:
                continue
            out.append(dict(t, ticket_id=k))
        return out

    def tool_get_ticket(self, ticket_id):
        return dict(self._ticket(ticket_id), ticket_id=ticket_id)

    def tool_update_ticket(self, ticket_id, status=None, priority=None, assignee=None):
        t = self._ticket(ticket_id)
        if assignee is not None and assignee not in USERS:
            raise ToolError("unknown user " + assignee + "; users: " + ", ".join(USERS))
        if status is not None:
            t["status"] = status
        if priority is not None:
            t["priority"] = priority
        if assignee is not None:
            t["assignee"] = assignee
        return dict(t, ticket_id=ticket_id)
