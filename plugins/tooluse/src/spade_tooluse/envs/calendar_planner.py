"""A personal calendar: cancel a meeting, add one without overlaps, move another."""

from spade_tooluse.base import ToolEnv, ToolError, Turn, call, function_schema

TITLES = ["Dentist", "Team standup", "1:1 with Sam", "Gym", "Project review", "Lunch with Ali", "Code review", "Call with bank"]
DAYS = ["2025-03-03", "2025-03-04", "2025-03-05"]


class CalendarPlannerEnv(ToolEnv):
    description = "You manage a user's calendar. Times are whole hours on a 24h clock; events may not overlap."
    advance_on = "reply"
    EVENTS = 6
    # what an edit may change (spade_designer.knobs): events already in the calendar (more would reach the 15:00 slot a move asks for)
    KNOBS = {"EVENTS": (int, 3, 6)}
    HARDER = {"EVENTS": "higher"}
    tools = [
        function_schema("list_events", "Events on a day (YYYY-MM-DD).", {"day": {"type": "string"}}, ["day"]),
        function_schema("find_events", "Events whose title contains the text.", {"text": {"type": "string"}}, ["text"]),
        function_schema(
            "create_event", "Create an event from start hour to end hour (exclusive). Returns its id.",
            {"title": {"type": "string"}, "day": {"type": "string"}, "start": {"type": "integer"}, "end": {"type": "integer"}},
            ["title", "day", "start", "end"],
        ),
        function_schema(
            "move_event", "Move an event to a new day and start hour, keeping its length.",
            {"event_id": {"type": "string"}, "day": {"type": "string"}, "start": {"type": "integer"}}, ["event_id", "day", "start"],
        ),
        function_schema("cancel_event", "Delete an event.", {"event_id": {"type": "string"}}, ["event_id"]),
    ]

    def build(self):
        rng = self.rng
        titles = rng.sample(TITLES, self.EVENTS)
        events = {}
        for n, title in enumerate(titles):
            day = DAYS[n % 3]
            start = 9 + 3 * (n // 3) + rng.randint(0, 1)
            events["EV" + str(n + 1)] = {"title": title, "day": day, "start": start, "end": start + 1}
        self.state = {"events": events, "next_id": self.EVENTS + 1}
        gone = "EV" + str(1 + rng.randrange(self.EVENTS))
        mover = "EV" + str(1 + (int(gone[2:]) % self.EVENTS))
        new_title = rng.choice(["Dinner with Mia", "Piano lesson", "Haircut"])
        new_day = rng.choice(DAYS)
        new_start = 17 + rng.randint(0, 2)
        move_day = rng.choice(DAYS)
        move_start = 15
        return [
            Turn(
                user="Cancel my '" + events[gone]["title"] + "'.",
                calls=[call("find_events", text=events[gone]["title"]), call("cancel_event", event_id=gone)],
            ),
            Turn(
                user="Add '" + new_title + "' on " + new_day + " from " + str(new_start) + ":00 to " + str(new_start + 2) + ":00.",
                calls=[call("create_event", title=new_title, day=new_day, start=new_start, end=new_start + 2)],
            ),
            Turn(
                user="Move '" + events[mover]["title"] + "' to " + move_day + " at 15:00.",
                calls=[call("find_events", text=events[mover]["title"]), call("move_event", event_id=mover, day=move_day, start=move_start)],
            ),
        ]

    def _clash(self, day, start, end, skip=None):
        for eid, e in sorted(self.state["events"].items()):
            if eid != skip and e["day"] == day and start < e["end"] and e["start"] < end:
                return eid
        return None

    def tool_list_events(self, day):
        return [dict(e, event_id=k) for k, e in sorted(self.state["events"].items()) if e["day"] == day]

    def tool_find_events(self, text):
        return [dict(e, event_id=k) for k, e in sorted(self.state["events"].items()) if text.lower() in e["title"].lower()]

    def tool_create_event(self, title, day, start, end):
        if not 0 <= start < end <= 24:
            raise ToolError("invalid hours")
        clash = self._clash(day, start, end)
        if clash is not None:
            raise ToolError("overlaps with " + clash)
        eid = "EV" + str(self.state["next_id"])
        self.state["next_id"] += 1
        self.state["events"][eid] = {"title": title, "day": day, "start": start, "end": end}
        return {"event_id": eid}

    def tool_move_event(self, event_id, day, start):
        e = self.state["events"].get(event_id)
        if e is None:
            raise ToolError("no event " + event_id)
        end = start + e["end"] - e["start"]
        if not 0 <= start < end <= 24:
            raise ToolError("invalid hours")
        clash = self._clash(day, start, end, skip=event_id)
        if clash is not None:
            raise ToolError("overlaps with " + clash)
        e["day"], e["start"], e["end"] = day, start, end
        return {"event_id": event_id, "day": day, "start": start, "end": end}

    def tool_cancel_event(self, event_id):
        if event_id not in self.state["events"]:
            raise ToolError("no event " + event_id)
        del self.state["events"][event_id]
        return {"cancelled": event_id}
