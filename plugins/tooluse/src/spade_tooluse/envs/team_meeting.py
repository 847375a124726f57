"""A CRM and a calendar: find a company's contacts, find a common free hour, invite them."""

from spade_tooluse.base import ToolEnv, ToolError, Turn, call, function_schema

COMPANIES = ["Acme", "Globex", "Initech", "Umbrella"]
FIRST = ["Ana", "Ben", "Chen", "Dara", "Emil", "Fatou", "Gio", "Hana", "Ivo", "Jun", "Kemal", "Liv"]
DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday"]


class TeamMeetingEnv(ToolEnv):
    description = "You coordinate meetings using a contact directory and everyone's calendar. Hours are 9 to 17."
    advance_on = "reply"
    CONTACTS = 8
    FREE_HOURS = 4
    # what an edit may change (spade_designer.knobs): contacts (spread over three companies) and the free hours each has besides the common one
    KNOBS = {"CONTACTS": (int, 6, 12), "FREE_HOURS": (int, 1, 8)}
    HARDER = {"CONTACTS": "higher"}
    tools = [
        function_schema("search_contacts", "Contacts working at a company.", {"company": {"type": "string"}}, ["company"]),
        function_schema(
            "get_free_hours", "The hours (24h clock) a contact is free on a weekday.",
            {"contact_id": {"type": "string"}, "day": {"type": "string", "enum": DAYS}}, ["contact_id", "day"],
        ),
        function_schema(
            "schedule_meeting", "Create a meeting with the given contacts at a whole hour. Returns the meeting id.",
            {
                "title": {"type": "string"},
                "contact_ids": {"type": "array", "items": {"type": "string"}},
                "day": {"type": "string", "enum": DAYS},
                "hour": {"type": "integer"},
            },
            ["title", "contact_ids", "day", "hour"],
        ),
        function_schema("send_invites", "Email the invitation of a meeting to all its participants.",
                        {"meeting_id": {"type": "string"}}, ["meeting_id"]),
    ]

    def build(self):
        rng = self.rng
        people = rng.sample(FIRST, self.CONTACTS)
        contacts = {}
        for n, name in enumerate(people):
            contacts["C" + str(n + 1)] = {"name": name, "company": COMPANIES[n % 3]}
        company = COMPANIES[rng.randrange(3)]
        day = rng.choice(DAYS)
        team = sorted(k for k, v in contacts.items() if v["company"] == company)
        common = rng.randint(11, 16)
        free = {}
        for cid in contacts:
            hours = set(rng.sample(range(9, 18), self.FREE_HOURS))
            if cid in team:
                hours.add(common)
            free[cid] = {day: sorted(hours)}
        shared = set(range(9, 18))
        for cid in team:
            shared &= set(free[cid][day])
        first = min(shared)
        title = rng.choice(["Roadmap review", "Budget sync", "Launch plan"])
        self.state = {"contacts": contacts, "free": free, "meetings": {}, "next_meeting": 1}
        return [
            Turn(
                user="Set up a meeting called '" + title + "' with everyone from " + company + " on " + day
                + ", at the earliest hour when all of them are free.",
                calls=[call("search_contacts", company=company)]
                + [call("get_free_hours", contact_id=c, day=day) for c in team]
                + [call("schedule_meeting", title=title, contact_ids=team, day=day, hour=first)],
            ),
            Turn(user="Send the invitations for it.", calls=[call("send_invites", meeting_id="M1")]),
            Turn(
                user="Which hour did you pick? Write it like 14:00.",
                outputs=[str(first) + ":00"],
            ),
        ]

    def tool_search_contacts(self, company):
        return [{"contact_id": k, "name": v["name"]} for k, v in sorted(self.state["contacts"].items()) if v["company"].lower() == company.lower()]

    def tool_get_free_hours(self, contact_id, day):
        if contact_id not in self.state["free"]:
            raise ToolError("no contact " + contact_id)
        return {"contact_id": contact_id, "day": day, "free_hours": self.state["free"][contact_id].get(day, [])}

    def tool_schedule_meeting(self, title, contact_ids, day, hour):
        ids = sorted(set(contact_ids))
        for cid in ids:
            if cid not in self.state["free"]:
                raise ToolError("no contact " + str(cid))
            if hour not in self.state["free"][cid].get(day, []):
                raise ToolError(self.state["contacts"][cid]["name"] + " is not free at " + str(hour) + ":00 on " + day)
        meeting_id = "M" + str(self.state["next_meeting"])
        self.state["next_meeting"] += 1
        for cid in ids:
            self.state["free"][cid][day].remove(hour)
        self.state["meetings"][meeting_id] = {"title": title, "contacts": ids, "day": day, "hour": hour, "invited": False}
        return {"meeting_id": meeting_id}

    def tool_send_invites(self, meeting_id):
        meeting = self.state["meetings"].get(meeting_id)
        if meeting is None:
            raise ToolError("no meeting " + meeting_id)
        meeting["invited"] = True
        return {"meeting_id": meeting_id, "sent_to": meeting["contacts"]}
