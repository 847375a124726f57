"""A company directory: follow the management chain and count direct reports."""

from spade_tooluse.base import ToolEnv, ToolError, Turn, call, function_schema

NAMES = ["Aiko Sato", "Bram de Vries", "Carla Reyes", "Dmitri Orlov", "Esra Kaya", "Femi Adeyemi", "Greta Lind",
         "Hugo Blanc", "Isha Rao", "Jonas Berg", "Kofi Mensah", "Lea Vogel", "Mateo Cruz", "Nora Holm"]


class EmployeeDirectoryEnv(ToolEnv):
    description = "You answer questions using the company directory."
    advance_on = "reply"
    PEOPLE = 12
    # what an edit may change (spade_designer.knobs): people in the directory (a head, three leads, the rest engineers)
    KNOBS = {"PEOPLE": (int, 5, 14)}
    HARDER = {"PEOPLE": "higher"}
    tools = [
        function_schema("find_employee", "Employees whose name contains the text.", {"name": {"type": "string"}}, ["name"]),
        function_schema("get_employee", "An employee's record: name, title, department, manager id, phone.",
                        {"employee_id": {"type": "string"}}, ["employee_id"]),
        function_schema("list_reports", "Ids of the people who report directly to a manager.",
                        {"manager_id": {"type": "string"}}, ["manager_id"]),
    ]

    def build(self):
        rng = self.rng
        names = rng.sample(NAMES, self.PEOPLE)
        ids = ["E" + str(rng.randint(100, 999)) + str(n) for n in range(self.PEOPLE)]
        people = {}
        # a tree: 0 is the head; 1-3 report to 0; the rest report to one of 1-3
        for n, (eid, name) in enumerate(zip(ids, names)):
            if n == 0:
                manager = None
            elif n <= 3:
                manager = ids[0]
            else:
                manager = ids[1 + rng.randrange(3)]
            people[eid] = {"name": name, "title": "Head of Engineering" if n == 0 else ("Lead" if n <= 3 else "Engineer"),
                           "department": "Engineering", "manager_id": manager, "phone": "+1-555-" + str(rng.randint(1000, 9999))}
        target = ids[4 + rng.randrange(self.PEOPLE - 4)]
        boss = people[target]["manager_id"]
        reports = sorted(k for k, v in people.items() if v["manager_id"] == boss)
        self.state = {"people": people}
        first = people[target]["name"].split()[0]
        return [
            Turn(
                user="Who is " + people[target]["name"] + "'s manager?",
                calls=[call("find_employee", name=first), call("get_employee", employee_id=target), call("get_employee", employee_id=boss)],
                outputs=[people[boss]["name"]],
            ),
            Turn(
                user="How many people report directly to that manager? Answer with the number.",
                calls=[call("list_reports", manager_id=boss)],
                outputs=[str(len(reports))],
            ),
            Turn(
                user="And what is the phone number of that manager's own manager?",
                calls=[call("get_employee", employee_id=ids[0])],
                outputs=[people[ids[0]]["phone"]],
            ),
        ]

    def tool_find_employee(self, name):
        q = name.lower()
        return [{"employee_id": k, "name": v["name"]} for k, v in sorted(self.state["people"].items()) if q in v["name"].lower()]

    def tool_get_employee(self, employee_id):
        person = self.state["people"].get(employee_id)
        if person is None:
            raise ToolError("no employee " + employee_id)
        return dict(person, employee_id=employee_id)

    def tool_list_reports(self, manager_id):
        if manager_id not in self.state["people"]:
            raise ToolError("no employee " + manager_id)
        return sorted(k for k, v in self.state["people"].items() if v["manager_id"] == manager_id)
