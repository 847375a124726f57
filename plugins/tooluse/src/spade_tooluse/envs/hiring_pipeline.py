"""A hiring pipeline: advance strong candidates, schedule interviews, make an offer."""

from spade_tooluse.base import ToolEnv, ToolError, Turn, call, function_schema

ROLES = ["backend engineer", "designer", "data analyst"]
NAMES = ["Abena", "Basil", "Cora", "Deniz", "Elio", "Frida", "Goran", "Hiro", "Ines", "Jara", "Kian", "Lupe"]
STAGES = ["screening", "interview", "offer", "rejected"]


class HiringPipelineEnv(ToolEnv):
    description = "You run a hiring pipeline. Stages: screening -> interview -> offer; any stage -> rejected."
    advance_on = "reply"
    CANDIDATES = 12
    # what an edit may change (spade_designer.knobs): candidates in the pipeline (spread over the three roles)
    KNOBS = {"CANDIDATES": (int, 6, 12)}
    HARDER = {"CANDIDATES": "higher"}
    tools = [
        function_schema("list_candidates", "Candidates for a role, optionally only those in a stage.",
                        {"role": {"type": "string"}, "stage": {"type": "string", "enum": STAGES}}, ["role"]),
        function_schema("move_to_stage", "Move a candidate to another stage.",
                        {"candidate_id": {"type": "string"}, "stage": {"type": "string", "enum": STAGES}}, ["candidate_id", "stage"]),
        function_schema("schedule_interview", "Book an interview slot (day 1-5) for a candidate in the interview stage.",
                        {"candidate_id": {"type": "string"}, "day": {"type": "integer"}}, ["candidate_id", "day"]),
        function_schema("make_offer", "Offer a yearly salary to a candidate in the interview stage; moves them to offer.",
                        {"candidate_id": {"type": "string"}, "salary": {"type": "integer"}}, ["candidate_id", "salary"]),
    ]

    def build(self):
        rng = self.rng
        people = {}
        scores = rng.sample(range(40, 100), self.CANDIDATES)
        for n, name in enumerate(rng.sample(NAMES, self.CANDIDATES)):
            people["CAND-" + str(n + 1).zfill(2)] = {"name": name, "role": ROLES[n % 3], "stage": "screening", "score": scores[n],
                                            "interview_day": None, "salary": None}
        role = rng.choice(ROLES)
        cut = rng.choice([60, 65, 70])
        strong = sorted(k for k, p in people.items() if p["role"] == role and p["score"] >= cut)
        weak = sorted(k for k, p in people.items() if p["role"] == role and p["score"] < cut)
        if not strong:
            best = max((k for k, p in people.items() if p["role"] == role), key=lambda k: people[k]["score"])
            people[best]["score"] = cut + 5
            strong, weak = [best], [k for k in weak if k != best]
        top = max(strong, key=lambda k: people[k]["score"])
        salary = rng.choice([72000, 80000, 95000])
        self.state = {"candidates": people}
        return [
            Turn(
                user="For the " + role + " role, move every screening candidate scoring at least " + str(cut)
                + " to interview and reject the others in screening.",
                calls=[call("list_candidates", role=role, stage="screening")]
                + [call("move_to_stage", candidate_id=k, stage="interview") for k in strong]
                + [call("move_to_stage", candidate_id=k, stage="rejected") for k in weak],
            ),
            Turn(
                user="Schedule their interviews: one per day starting on day 1, in order of candidate id.",
                calls=[call("schedule_interview", candidate_id=k, day=d + 1) for d, k in enumerate(strong)],
            ),
            Turn(
                user="Offer " + str(salary) + " to the highest-scoring one. What is their name?",
                calls=[call("make_offer", candidate_id=top, salary=salary)],
                outputs=[people[top]["name"]],
            ),
        ]

    def _candidate(self, candidate_id):
        c = self.state["candidates"].get(candidate_id)
        if c is None:
            raise ToolError("no candidate " + candidate_id)
        return c

    def tool_list_candidates(self, role, stage=None):
        return [dict(c, candidate_id=k) for k, c in sorted(self.state["candidates"].items())
                if c["role"] == role.lower() and (stage is None or c["stage"] == stage)]

    def tool_move_to_stage(self, candidate_id, stage):
        c = self._candidate(candidate_id)
        if c["stage"] in ("offer", "rejected"):
            raise ToolError(candidate_id + " is already in " + c["stage"])
        c["stage"] = stage
        return {"candidate_id": candidate_id, "stage": stage}

    def tool_schedule_interview(self, candidate_id, day):
        c = self._candidate(candidate_id)
        if c["stage"] != "interview":
            raise ToolError(candidate_id + " is not in the interview stage")
        if not 1 <= day <= 5:
            raise ToolError("day must be 1-5")
        taken = [k for k, o in self.state["candidates"].items() if o["interview_day"] == day and k != candidate_id]
        if taken:
            raise ToolError("day " + str(day) + " is taken by " + taken[0])
        c["interview_day"] = day
        return {"candidate_id": candidate_id, "day": day}

    def tool_make_offer(self, candidate_id, salary):
        c = self._candidate(candidate_id)
        if c["stage"] != "interview":
            raise ToolError(candidate_id + " is not in the interview stage")
        c["stage"] = "offer"
        c["salary"] = salary
        return {"candidate_id": candidate_id, "stage": "offer"}
