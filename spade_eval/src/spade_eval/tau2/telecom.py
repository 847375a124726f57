"""The telecom domain (dual control): the agent's tools over the telecom database, and the
sync that carries it to the user's phone (:mod:`.telecom_phone`; the user's tools over it:
:mod:`.telecom_user`)."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from spade_core.answers import numbers_match

from ._common import INTEGER as _I
from ._common import STRING as _S
from ._common import Tau2DataError
from ._common import conform as _conform
from ._common import declare as _fn

if TYPE_CHECKING:
    from .telecom_user import TelecomUserTools

#: The telecom domain's fixed "today" (its tools date suspensions, charges and cycles by it).
TELECOM_TODAY = datetime.date(2025, 2, 25)
LINE_ACTIVE, LINE_SUSPENDED, LINE_PENDING = "Active", "Suspended", "Pending Activation"
BILL_DRAFT, BILL_AWAITING, BILL_PAID, BILL_OVERDUE = "Draft", "Awaiting Payment", "Paid", "Overdue"


def _first_of_next_month(day: datetime.date) -> datetime.date:
    return (day.replace(day=1) + datetime.timedelta(days=32)).replace(day=1)


class TelecomTools:
    """The telecom domain's agent tools over ``db`` (tau2-bench's telecom database: lists
    ``plans``, ``customers``, ``lines``, ``bills``, ``devices``), written here from the
    benchmark's tool semantics: the same lookups, checks, errors and database changes.

    :data:`ENV_FUNCTIONS` are not tools: the task files' initial states and assertions call
    them by name (``set_data_usage``, ``suspend_line_for_overdue_bill``, ``assert_*``)."""

    ENV_FUNCTIONS = ("set_data_usage", "suspend_line_for_overdue_bill", "assert_data_refueling_amount",
                     "assert_line_status", "assert_overdue_bill_exists", "assert_no_overdue_bill")

    def __init__(self, db: dict[str, Any]) -> None:
        for key in ("plans", "customers", "lines", "bills", "devices"):
            if not isinstance(db.get(key, []), list):
                raise Tau2DataError(f"telecom db: field {key} must be a list")
            db.setdefault(key, [])
        self.db = db
        self._new_bills = 0

    def _arguments(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return _conform(TELECOM_TOOLS[name]["function"]["parameters"], arguments, "")

    # lookups (the benchmark's messages)
    def _find(self, table: str, key: str, value: str, what: str) -> dict[str, Any]:
        for row in self.db[table]:
            if row.get(key) == value:
                return row
        raise ValueError(f"{what} with ID {value} not found")

    def _customer(self, customer_id: str) -> dict[str, Any]:
        return self._find("customers", "customer_id", customer_id, "Customer")

    def _line(self, line_id: str) -> dict[str, Any]:
        return self._find("lines", "line_id", line_id, "Line")

    def _plan(self, plan_id: str) -> dict[str, Any]:
        return self._find("plans", "plan_id", plan_id, "Plan")

    def _bill(self, bill_id: str) -> dict[str, Any]:
        return self._find("bills", "bill_id", bill_id, "Bill")

    def _line_by_phone(self, phone_number: str) -> dict[str, Any]:
        for line in self.db["lines"]:
            if line.get("phone_number") == phone_number:
                return line
        raise ValueError(f"Line with phone number {phone_number} not found")

    def _target_line(self, customer_id: str, line_id: str) -> dict[str, Any]:
        if line_id not in self._customer(customer_id).get("line_ids", []):
            raise ValueError(f"Line {line_id} not found for customer {customer_id}")
        return self._line(line_id)

    def _bills_awaiting_payment(self, customer: dict[str, Any]) -> list[dict[str, Any]]:
        return [b for b in (self._bill(i) for i in customer.get("bill_ids", [])) if b.get("status") == BILL_AWAITING]

    def _new_bill_id(self) -> str:
        """A new draft bill's id: ``B`` and 8 hex digits as the benchmark's, but counted
        (``Bd0000001``, ...) where the benchmark draws them at random."""
        while True:
            self._new_bills += 1
            bill_id = f"Bd{self._new_bills:07x}"
            if not any(b.get("bill_id") == bill_id for b in self.db["bills"]):
                return bill_id

    def _charge(self, customer_id: str, amount: float, description: str) -> None:
        """A one-time charge (a credit when negative) on the customer's draft bill, one made
        for next month when there is none."""
        customer = self._customer(customer_id)
        draft = next((b for b in (self._bill(i) for i in customer.get("bill_ids", [])) if b.get("status") == BILL_DRAFT),
                     None)
        if draft is None:
            start = _first_of_next_month(TELECOM_TODAY)
            draft = {"bill_id": self._new_bill_id(), "customer_id": customer_id, "period_start": start.isoformat(),
                     "period_end": (_first_of_next_month(start) - datetime.timedelta(days=1)).isoformat(),
                     "issue_date": start.isoformat(), "total_due": 0.0,
                     "due_date": (start + datetime.timedelta(days=14)).isoformat(), "line_items": [],
                     "status": BILL_DRAFT}
            self.db["bills"].append(draft)
            customer.setdefault("bill_ids", []).append(draft["bill_id"])
        draft.setdefault("line_items", []).append({"description": description, "amount": amount,
                                                   "date": TELECOM_TODAY.isoformat(),
                                                   "item_type": "Credit" if amount < 0 else "Charge"})
        draft["total_due"] = draft.get("total_due", 0.0) + amount

    # read tools
    def get_customer_by_phone(self, phone_number: str) -> dict[str, Any]:
        for customer in self.db["customers"]:
            if customer.get("phone_number") == phone_number:
                return customer
            if any(self._line(i).get("phone_number") == phone_number for i in customer.get("line_ids", [])):
                return customer
        raise ValueError(f"Customer with phone number {phone_number} not found")

    def get_customer_by_id(self, customer_id: str) -> dict[str, Any]:
        return self._customer(customer_id)

    def get_customer_by_name(self, full_name: str, dob: str) -> list[dict[str, Any]]:
        return [c for c in self.db["customers"]
                if str(c.get("full_name", "")).lower() == full_name.lower() and c.get("date_of_birth") == dob]

    def get_details_by_id(self, id: str) -> dict[str, Any]:  # the benchmark names the parameter id
        for prefix, lookup in (("L", self._line), ("D", lambda i: self._find("devices", "device_id", i, "Device")),
                               ("B", self._bill), ("C", self._customer), ("P", self._plan)):
            if id.startswith(prefix):
                return lookup(id)
        raise ValueError(f"Unknown ID format or type: {id}")

    def get_bills_for_customer(self, customer_id: str, limit: int = 12) -> list[dict[str, Any]]:
        bills = [self._bill(i) for i in self._customer(customer_id).get("bill_ids", [])]
        return sorted(bills, key=lambda b: str(b.get("issue_date")), reverse=True)[:limit]

    def get_data_usage(self, customer_id: str, line_id: str) -> dict[str, Any]:
        line = self._target_line(customer_id, line_id)
        plan = self._plan(line["plan_id"])
        return {"line_id": line_id, "data_used_gb": line.get("data_used_gb", 0.0),
                "data_limit_gb": plan.get("data_limit_gb"), "data_refueling_gb": line.get("data_refueling_gb", 0.0),
                "cycle_end_date": (_first_of_next_month(TELECOM_TODAY) - datetime.timedelta(days=1)).isoformat()}

    # write tools
    def suspend_line(self, customer_id: str, line_id: str, reason: str) -> dict[str, Any]:
        line = self._target_line(customer_id, line_id)
        if line.get("status") != LINE_ACTIVE:
            raise ValueError("Line must be active to suspend")
        line["status"] = LINE_SUSPENDED
        line["suspension_start_date"] = TELECOM_TODAY.isoformat()
        return {"message": "Line suspended successfully. $5/month holding fee will apply.", "line": line}

    def resume_line(self, customer_id: str, line_id: str) -> dict[str, Any]:
        line = self._target_line(customer_id, line_id)
        if line.get("status") not in (LINE_SUSPENDED, LINE_PENDING):
            raise ValueError("Line must be suspended to resume")
        line["status"] = LINE_ACTIVE
        line["suspension_start_date"] = None
        return {"message": "Line resumed successfully", "line": line}

    def send_payment_request(self, customer_id: str, bill_id: str) -> str:
        customer = self._customer(customer_id)
        if self._bills_awaiting_payment(customer):
            raise ValueError("A bill is already awaiting payment for this customer")
        if bill_id not in customer.get("bill_ids", []):
            raise ValueError(f"Bill {bill_id} not found for customer {customer_id}")
        self._bill(bill_id)["status"] = BILL_AWAITING  # the benchmark does not check for a paid bill either
        return f"Payment request sent to the customer for bill {bill_id}"

    def enable_roaming(self, customer_id: str, line_id: str) -> str:
        line = self._target_line(customer_id, line_id)
        if line.get("roaming_enabled"):
            return "Roaming was already enabled"
        line["roaming_enabled"] = True
        return "Roaming enabled successfully"

    def disable_roaming(self, customer_id: str, line_id: str) -> str:
        line = self._target_line(customer_id, line_id)
        if not line.get("roaming_enabled"):
            return "Roaming was already disabled"
        line["roaming_enabled"] = False
        return "Roaming disabled successfully"

    def transfer_to_human_agents(self, summary: str) -> str:
        return "Transfer successful"

    def refuel_data(self, customer_id: str, line_id: str, gb_amount: float) -> dict[str, Any]:
        line = self._target_line(customer_id, line_id)
        if gb_amount <= 0:
            raise ValueError("Refuel amount must be positive")
        plan = self._plan(line["plan_id"])
        price = float(plan["data_refueling_price_per_gb"])
        charge = gb_amount * price
        line["data_refueling_gb"] = line.get("data_refueling_gb", 0.0) + gb_amount
        self._charge(customer_id, charge, f"Data refueling: {gb_amount} GB at ${price}/GB")
        return {"message": f"Successfully added {gb_amount} GB of data for line {line_id} for ${charge:.2f}",
                "new_data_refueling_gb": line["data_refueling_gb"], "charge": charge}

    # environment functions (initial states, assertions)
    def set_data_usage(self, customer_id: str, line_id: str, data_used_gb: float) -> str:
        self._target_line(customer_id, line_id)["data_used_gb"] = data_used_gb
        return f"Data usage set to {data_used_gb} GB for line {line_id}"

    def suspend_line_for_overdue_bill(self, customer_id: str, line_id: str, new_bill_id: str,
                                      contract_ended: bool) -> str:
        line = self._line(line_id)
        if line.get("status") != LINE_ACTIVE:
            raise ValueError("Line must be active to suspend for unpaid bill")
        amount = float(self._plan(line["plan_id"])["price_per_month"])
        if amount <= 0:
            raise ValueError("Amount must be positive for overdue bill")
        customer = self._customer(customer_id)
        if any(self._bill(i).get("status") == BILL_OVERDUE for i in customer.get("bill_ids", [])):
            raise ValueError("Customer already has an overdue bill")
        last_month_end = TELECOM_TODAY.replace(day=1) - datetime.timedelta(days=1)
        last_month_start = last_month_end.replace(day=1)
        self.db["bills"].append({
            "bill_id": new_bill_id, "customer_id": customer_id, "period_start": last_month_start.isoformat(),
            "period_end": last_month_end.isoformat(), "issue_date": last_month_start.isoformat(),
            "total_due": 0.0 + amount, "due_date": (last_month_start + datetime.timedelta(days=14)).isoformat(),
            "line_items": [{"description": f"Charge for line {line_id}", "amount": amount,
                            "date": TELECOM_TODAY.isoformat(), "item_type": "Charge"}],
            "status": BILL_OVERDUE})
        customer.setdefault("bill_ids", []).append(new_bill_id)
        line["status"] = LINE_SUSPENDED
        line["suspension_start_date"] = TELECOM_TODAY.isoformat()
        if contract_ended:
            line["contract_end_date"] = last_month_end.isoformat()
        return f"Line {line_id} suspended for unpaid bill {new_bill_id}. Contract ended: {contract_ended}"

    def assert_data_refueling_amount(self, customer_id: str, line_id: str, expected_amount: float) -> bool:
        return numbers_match(self._target_line(customer_id, line_id).get("data_refueling_gb", 0.0), expected_amount,
                             abs_tol=1e-6)

    def assert_line_status(self, customer_id: str, line_id: str, expected_status: str) -> bool:
        return self._target_line(customer_id, line_id).get("status") == expected_status

    def assert_overdue_bill_exists(self, customer_id: str, overdue_bill_id: str) -> bool:
        if overdue_bill_id not in self._customer(customer_id).get("bill_ids", []):
            raise ValueError(f"Overdue bill {overdue_bill_id} not found")
        if self._bill(overdue_bill_id).get("status") != BILL_OVERDUE:
            raise ValueError(f"Overdue bill {overdue_bill_id} is not overdue")
        return True

    def assert_no_overdue_bill(self, overdue_bill_id: str) -> bool:
        try:
            return self._bill(overdue_bill_id).get("status") == BILL_PAID
        except ValueError:
            return True  # no such bill: nothing overdue


_ID = {"customer_id": (_S, "the customer's id, such as 'C1001'"), "line_id": (_S, "the line's id, such as 'L1001'")}
#: The telecom agent tools this adapter implements (the benchmark's whole telecom agent tool
#: set), with their OpenAI-format declarations; a call's arguments are checked against them.
TELECOM_TOOLS: dict[str, dict[str, Any]] = {t["function"]["name"]: t for t in [
    _fn("get_customer_by_phone", "Find the customer whose contact number or one of whose lines has this phone number.",
        phone_number=(_S, "the phone number, such as '555-123-2002'")),
    _fn("get_customer_by_id", "Get a customer by their id.", customer_id=_ID["customer_id"]),
    _fn("get_customer_by_name", "Find customers by full name and date of birth (several may match).",
        full_name=(_S, "the customer's full name"), dob=(_S, "date of birth, YYYY-MM-DD")),
    _fn("get_details_by_id", "Get the record of a customer (C...), line (L...), device (D...), bill (B...) or plan "
        "(P...) by its id.", id=(_S, "the id")),
    _fn("suspend_line", "Suspend an active line of the customer (at most 6 months; a $5/month holding fee "
        "applies).", **_ID, reason=(_S, "why the line is suspended")),
    _fn("resume_line", "Resume a suspended (or pending-activation) line of the customer.", **_ID),
    _fn("get_bills_for_customer", "List the customer's bills, newest first.", optional=("limit",),
        customer_id=_ID["customer_id"], limit=(_I, "at most this many bills (default 12)")),
    _fn("send_payment_request", "Send the customer a payment request for one of their bills (it then awaits "
        "payment; only one bill may await payment at a time; check first that the bill is not paid).",
        customer_id=_ID["customer_id"], bill_id=(_S, "the bill's id")),
    _fn("get_data_usage", "Get a line's data usage this billing cycle: used, plan limit, refueled data and the "
        "cycle's end date.", **_ID),
    _fn("enable_roaming", "Enable international roaming on a line of the customer.", **_ID),
    _fn("disable_roaming", "Disable international roaming on a line of the customer.", **_ID),
    _fn("transfer_to_human_agents", "Transfer the user to a human agent with a summary of the issue; only when the "
        "user asks for one or the issue cannot be solved with these tools and the policy.",
        summary=(_S, "summary of the user's issue")),
    _fn("refuel_data", "Add data to a line for this billing cycle, charged on the customer's next bill at the "
        "plan's price per GB.", **_ID, gb_amount=("number", "gigabytes to add")),
]}
#: Telecom agent tools of the benchmark this adapter does not implement: none (all thirteen are).
TELECOM_NOT_IMPLEMENTED: tuple[str, ...] = ()


def telecom_sync(tools: TelecomTools, user: TelecomUserTools) -> None:
    """What the telecom database tells the phone, after every step (the benchmark's
    ``sync_tools``): whether the user's line is active, roams, is over its data; a paid
    payment request marks its bill paid; a bill awaiting payment becomes a payment request."""
    s = user.surroundings
    phone = s.get("phone_number")
    if phone is None:
        return
    try:
        line = tools._line_by_phone(phone)
        plan = tools._plan(line["plan_id"])
    except ValueError as exc:
        raise Tau2DataError(f"telecom: the user's phone number {phone} has no line and plan in the database ({exc})") \
            from None
    s["line_active"] = line.get("status") == LINE_ACTIVE
    s["roaming_allowed"] = bool(line.get("roaming_enabled"))
    s["mobile_data_usage_exceeded"] = (line.get("data_used_gb", 0.0)
                                       >= plan.get("data_limit_gb", 0.0) + line.get("data_refueling_gb", 0.0))
    request = s.get("payment_request")
    if request is not None and request.get("paid"):
        tools._bill(request["bill_id"])["status"] = BILL_PAID
        s["payment_request"] = None
    if s.get("payment_request") is None:
        waiting = tools._bills_awaiting_payment(tools.get_customer_by_phone(phone))
        if waiting:
            s["payment_request"] = {"bill_id": waiting[0]["bill_id"], "amount_due": float(waiting[0]["total_due"]),
                                    "paid": False}
