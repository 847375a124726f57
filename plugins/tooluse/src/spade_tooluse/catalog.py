"""The seed pool: eighteen hand-written tool-use environments, three per skill.

Each is a standalone reference-format source file under ``envs/`` that imports only
``spade_tooluse.base`` (plus allow-listed standard library), so it runs unchanged inside
the sandbox. This table is the one place that says which skill an environment trains, how
hard it is and how many agent messages it gets.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from spade_core.domains import SeedEnv

ENVS_DIR = Path(__file__).parent / "envs"

SKILLS: tuple[str, ...] = (
    "api_orchestration",
    "data_retrieval",
    "state_modification",
    "error_recovery",
    "tool_selection",
    "multi_step_workflows",
)


@dataclass(frozen=True)
class _Entry:
    name: str
    skill: str
    class_name: str
    difficulty: float
    description: str
    max_turns: int = 20


_ENTRIES: tuple[_Entry, ...] = (
    _Entry("travel_booking", "api_orchestration", "TravelBookingEnv", 0.4,
           "Search flights and hotels, book the cheapest within a trip budget, report what is left."),
    _Entry("order_fulfillment", "api_orchestration", "OrderFulfillmentEnv", 0.35,
           "Find a product, create an order, take payment, ship it, report the remaining stock."),
    _Entry("team_meeting", "api_orchestration", "TeamMeetingEnv", 0.55,
           "Combine a contact directory and calendars to book a meeting at the earliest common free hour."),
    _Entry("library_catalog", "data_retrieval", "LibraryCatalogEnv", 0.35,
           "Count an author's books, find the oldest by reading records, check it out."),
    _Entry("sales_table", "data_retrieval", "SalesTableEnv", 0.45,
           "Filter and sum a sales table, find a month's best seller, flag the top-revenue row."),
    _Entry("employee_directory", "data_retrieval", "EmployeeDirectoryEnv", 0.4,
           "Follow a management chain: a manager, their direct reports, the manager's manager's phone."),
    _Entry("file_system", "state_modification", "FileSystemEnv", 0.45,
           "Create a folder, move the log files into it, write an exact index file."),
    _Entry("calendar_planner", "state_modification", "CalendarPlannerEnv", 0.4,
           "Cancel, create and move calendar events without overlaps."),
    _Entry("ticket_tracker", "state_modification", "TicketTrackerEnv", 0.5,
           "Triage tickets: assign high-priority ones, close one, re-prioritise a colleague's."),
    _Entry("bank_ledger", "error_recovery", "BankLedgerEnv", 0.5,
           "A transfer over the per-transfer limit fails; split it, then report a balance."),
    _Entry("deploy_pipeline", "error_recovery", "DeployPipelineEnv", 0.55,
           "Deploys fail on a missing setting and a lock; read the errors and fix both."),
    _Entry("warehouse_stock", "error_recovery", "WarehouseStockEnv", 0.55,
           "A reservation one warehouse cannot cover must be split; then rebalance and count."),
    _Entry("mail_inbox", "tool_selection", "MailInboxEnv", 0.4,
           "Eight similar mailbox tools: count unread, star by sender, file invoices."),
    _Entry("math_toolkit", "tool_selection", "MathToolkitEnv", 0.35,
           "Pick the right calculator operation and store exact results in memory."),
    _Entry("smart_home", "tool_selection", "SmartHomeEnv", 0.3,
           "Lights, heating and locks among distractor tools; a 'leaving home' routine."),
    _Entry("expense_reports", "multi_step_workflows", "ExpenseReportsEnv", 0.5,
           "Create, fill within policy, submit and approve an expense report."),
    _Entry("grocery_planner", "multi_step_workflows", "GroceryPlannerEnv", 0.6,
           "Scale recipes, subtract the pantry across two meals, fill the cart, check out."),
    _Entry("hiring_pipeline", "multi_step_workflows", "HiringPipelineEnv", 0.5,
           "Advance or reject candidates by score, schedule interviews, make an offer."),
)


def seed_envs() -> tuple[SeedEnv, ...]:
    """Every seed environment as a :class:`SeedEnv` (paths point into the installed package)."""
    return tuple(
        SeedEnv(
            name=f"tooluse.{e.name}",
            skill=e.skill,
            path=ENVS_DIR / f"{e.name}.py",
            description=e.description,
            max_turns=e.max_turns,
            difficulty=e.difficulty,
            class_name=e.class_name,
        )
        for e in _ENTRIES
    )
