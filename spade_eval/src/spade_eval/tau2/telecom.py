"""The telecom domain (dual control): the agent's tools over the telecom database, the
user's phone and its tools, and the sync that carries the one to the other."""

from __future__ import annotations

import datetime
from typing import Any

from spade_core.answers import numbers_match

from ._common import INTEGER as _I
from ._common import STRING as _S
from ._common import Tau2DataError
from ._common import conform as _conform
from ._common import declare as _fn

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

# the user's phone and surroundings (the telecom user database)
_SIGNAL_BARS = {"none": "📵 No Signal", "poor": "📶¹ Poor", "fair": "📶² Fair", "good": "📶³ Good",
                "excellent": "📶⁴ Excellent"}
_SPEED_RANGE = {"2G": (0.1, 0.4), "3G": (1.0, 5.0), "4G": (10.0, 100.0), "5G": (50.0, 500.0), "none": (0.0, 0.0)}
_SIGNAL_FACTOR = {"poor": 0.2, "fair": 0.5, "good": 0.8, "excellent": 1.0, "none": 0.0}
_SPEED_ADVICE = {"Very Poor": "Connection is very slow. Basic web browsing might be difficult.",
                 "Poor": "Connection is slow. Web browsing may be sluggish, streaming difficult.",
                 "Fair": "Connection is okay for web browsing and some standard definition streaming.",
                 "Good": "Connection is good for most activities, including HD streaming.",
                 "Excellent": "Connection is very fast."}
NETWORK_MODES = ("4g_5g_preferred", "4g_only", "3g_only", "2g_only")
_MODE_TECH = {"4g_only": "4G", "3g_only": "3G", "2g_only": "2G"}
_SIM_TEXT = {"active": "Your SIM card is active and working.", "missing": "No SIM card detected in the phone.",
             "locked_pin": "The SIM card is locked with a PIN code.",
             "locked_puk": "The SIM card is locked with a PUK code."}
_PERMISSIONS = ("sms", "storage", "phone", "network")
APN_FIELDS = ("apn_name", "reset_at_reboot", "mms_apn", "mmsc_url", "mms_proxy", "mms_port")


def default_apn_settings() -> dict[str, Any]:
    return {"apn_name": "internet", "reset_at_reboot": False, "mms_apn": "mms",
            "mmsc_url": "http://mms.carrier.com/mms/wapenc", "mms_proxy": None, "mms_port": None}


def _app(name: str, *granted: str) -> dict[str, Any]:
    return {"app_name": name, "permissions": {p: p in granted for p in _PERMISSIONS}}


def default_telecom_user_db() -> dict[str, Any]:
    """The benchmark's default phone (5G with good signal, mobile data on, Wi-Fi off, the
    messaging and browser apps) and surroundings (at home, every network technology in
    reach, the line active)."""
    return {
        "device": {
            "sim_card_status": "active", "sim_card_missing": False, "airplane_mode": False,
            "network_signal_strength": "good", "network_technology_connected": "5G",
            "network_connection_status": "connected", "battery_level": 80, "data_enabled": True,
            "roaming_enabled": False, "network_mode_preference": "4g_5g_preferred",
            "active_apn_settings": default_apn_settings(), "wifi_enabled": False, "wifi_connected": False,
            "wifi_ssid": None, "wifi_signal_strength": "none", "wifi_calling_enabled": False,
            "wifi_calling_mms_over_wifi": False, "data_saver_mode": False, "vpn_enabled_setting": False,
            "vpn_connected": False, "vpn_details": None,
            "app_statuses": {"messaging": _app("messaging", "sms", "storage", "phone"),
                             "browser": _app("browser", "network", "storage")}},
        "surroundings": {
            "name": None, "phone_number": None, "is_abroad": False, "roaming_allowed": False,
            "signal_strength": {"2G": "poor", "3G": "fair", "4G": "good", "5G": "excellent"},
            "mobile_data_usage_exceeded": False, "line_active": True, "payment_request": None},
    }


class TelecomUserTools:
    """The telecom user's tools over ``db`` (``device``: the phone's settings and state;
    ``surroundings``: where the user is, what the network allows them, a pending payment
    request), written here from the benchmark's user-tool semantics: each tool changes the
    phone as there, re-runs its network search where the benchmark does, and answers the
    user with the same texts (a status bar after each change).

    :data:`ENV_FUNCTIONS` are not tools: the task files' initial states break the phone with
    them, and their assertions check it (``assert_*``)."""

    ENV_FUNCTIONS = ("set_user_info", "set_user_location", "turn_airplane_mode_on", "turn_airplane_mode_off",
                     "unseat_sim_card", "lock_sim_card", "turn_data_on", "turn_data_off", "turn_roaming_on",
                     "turn_roaming_off", "turn_data_saver_mode_on", "turn_data_saver_mode_off", "break_apn_settings",
                     "break_apn_mms_setting", "set_wifi_calling", "break_vpn", "remove_app_permission",
                     "simulate_network_search", "assert_airplane_mode_status", "assert_service_status",
                     "assert_mobile_data_status", "assert_mobile_roaming_status",
                     "assert_mobile_data_saver_mode_status", "assert_internet_speed", "assert_internet_not_excellent",
                     "assert_can_send_mms", "assert_mobile_data_usage_exceeded")
    DEFAULT_VPN = {"server_address": "192.168.1.1", "protocol": "OpenVPN", "server_performance": "excellent"}

    def __init__(self, db: dict[str, Any]) -> None:
        if not isinstance(db.get("device"), dict) or not isinstance(db.get("surroundings"), dict):
            raise Tau2DataError("telecom user db: fields device and surroundings must be objects")
        self.db = db

    def _arguments(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return _conform(TELECOM_USER_TOOLS[name]["function"]["parameters"], arguments, "")

    @property
    def device(self) -> dict[str, Any]:
        return self.db["device"]

    @property
    def surroundings(self) -> dict[str, Any]:
        return self.db["surroundings"]

    # the phone's state, as the benchmark derives it
    def _sim_status(self) -> str:
        return "missing" if self.device["sim_card_missing"] else self.device["sim_card_status"]

    def _no_service(self) -> None:
        self.device.update(network_connection_status="no_service", network_technology_connected="none",
                           network_signal_strength="none")

    def simulate_network_search(self) -> None:
        """Re-attach to the network: by the SIM, the preferred mode and the signal where the
        user is; no service in airplane mode, with a broken APN or an inactive line."""
        d, signals = self.device, self.surroundings["signal_strength"]
        if self._sim_status() == "active":
            d["network_connection_status"] = "connected"
            mode = d["network_mode_preference"]
            tech = _MODE_TECH.get(mode, "4G")
            if mode == "4g_5g_preferred" and signals.get("5G", "none") != "none":
                tech = "5G"
            d["network_technology_connected"] = tech
            d["network_signal_strength"] = signals.get(tech, "none")
        else:
            self._no_service()
        if (d["airplane_mode"] or d["active_apn_settings"]["apn_name"] == "broken"
                or not self.surroundings["line_active"]):
            self._no_service()

    def _mobile_data_working(self) -> bool:
        d, s = self.device, self.surroundings
        if d["airplane_mode"] or d["network_signal_strength"] == "none":
            return False
        if d["network_connection_status"] == "no_service":
            return False
        if s["is_abroad"] and not (d["roaming_enabled"] and s["roaming_allowed"]):
            return False
        return bool(d["data_enabled"]) and not s["mobile_data_usage_exceeded"]

    def _speed(self) -> tuple[float | None, str]:
        if not self._mobile_data_working():
            return None, "No Connection"
        d = self.device
        factor = 0.1 if (d["vpn_connected"] and d["vpn_details"]
                         and d["vpn_details"].get("server_performance") == "poor") else 1.0
        if d["data_saver_mode"]:
            factor *= 0.2
        low, high = _SPEED_RANGE.get(d["network_technology_connected"], (0.0, 0.0))
        speed = round((low + high) / 2.0 * _SIGNAL_FACTOR.get(d["network_signal_strength"], 0.0) * factor, 2)
        for bound, text in ((1, "Very Poor"), (5, "Poor"), (25, "Fair"), (100, "Good")):
            if speed < bound:
                return speed, text
        return speed, "Excellent"

    def _can_send_mms(self) -> bool:
        d = self.device
        if not self._mobile_data_working() or d["network_technology_connected"] == "2G":
            return False
        if d["wifi_calling_enabled"] and d["wifi_calling_mms_over_wifi"]:
            return False  # the carrier does not carry MMS over Wi-Fi
        if d["active_apn_settings"].get("mmsc_url") is None:
            return False
        app = d["app_statuses"].get("messaging")
        return app is not None and bool(app["permissions"].get("storage") and app["permissions"].get("sms"))

    def _status_bar(self) -> str:
        d = self.device
        parts = []
        if d["airplane_mode"]:
            parts.append("✈️ Airplane Mode")
        else:
            parts.append(_SIGNAL_BARS.get(d["network_signal_strength"], _SIGNAL_BARS["none"]))
            if d["network_technology_connected"] != "none":
                parts.append(d["network_technology_connected"])
            if d["data_enabled"] and d["network_technology_connected"] != "none":
                parts.append("📱 Data Enabled")
                if d["data_saver_mode"]:
                    parts.append("🔽 Data Saver")
            else:
                parts.append("📵 Data Disabled")
        if d["wifi_enabled"] and d["wifi_connected"]:
            parts.append(f"📡 Connected to {d['wifi_ssid']}" if d["wifi_ssid"] else "📡 Enabled")
        if d["vpn_connected"]:
            parts.append("🔒 VPN Connected")
        parts.append(f"🔋 {d['battery_level']}%")
        return " | ".join(parts)

    def _with_bar(self, text: str) -> str:
        return f"{text}\nStatus Bar: {self._status_bar()}"

    def _flip(self, key: str, *, search: bool = True) -> bool:
        self.device[key] = not self.device[key]
        if search:
            self.simulate_network_search()
        return self.device[key]

    # read tools
    def check_status_bar(self) -> str:
        return f"Status Bar: {self._status_bar()}"

    def check_network_status(self) -> str:
        d = self.device
        lines = [f"Airplane Mode: {'ON' if d['airplane_mode'] else 'OFF'}", f"SIM Card Status: {self._sim_status()}",
                 f"Cellular Connection: {d['network_connection_status']}",
                 f"Cellular Signal: {d['network_signal_strength']}",
                 f"Cellular Network Type: {d['network_technology_connected']}",
                 f"Mobile Data Enabled: {'Yes' if d['data_enabled'] else 'No'}",
                 f"Data Roaming Enabled: {'Yes' if d['roaming_enabled'] else 'No'}",
                 f"Wi-Fi Radio: {'ON' if d['wifi_enabled'] else 'OFF'}",
                 f"Wi-Fi Connected: {'Yes' if d['wifi_connected'] else 'No'}"]
        if d["wifi_connected"]:
            lines.append(f"Connected Wi-Fi Network: {d['wifi_ssid']}")
        return "\n".join(lines)

    def check_network_mode_preference(self) -> str:
        return f"Network Mode Preference: {self.device['network_mode_preference']}"

    def run_speed_test(self) -> str:
        speed, text = self._speed()
        if speed is None:
            return f"Speed test failed: {text or 'Could not determine speed'}."
        return f"Speed Test Result: {speed:.2f} Mbps ({text}). {_SPEED_ADVICE.get(text, '')}"

    def check_sim_status(self) -> str:
        return _SIM_TEXT.get(self._sim_status(), f"Unknown SIM status: {self._sim_status()}")

    def check_data_restriction_status(self) -> str:
        return "Data Saver mode is ON (limits data usage)." if self.device["data_saver_mode"] \
            else "Data Saver mode is OFF."

    def check_apn_settings(self) -> str:
        apn = self.device["active_apn_settings"]
        return (f"Current APN Name: {apn['apn_name'] or 'Not Set'}\nMMSC URL (for picture messages): "
                f"{apn.get('mmsc_url') or 'Not Set'}\n(These are technical settings, usually best left unchanged.)")

    def check_wifi_status(self) -> str:
        d = self.device
        if not d["wifi_enabled"]:
            return "Wi-Fi is turned OFF."
        if d["wifi_connected"]:
            return f"Wi-Fi is ON and connected to '{d['wifi_ssid']}'. Signal strength: {d['wifi_signal_strength']}."
        return "Wi-Fi is ON but not connected to any network."

    def check_wifi_calling_status(self) -> str:
        return f"Wi-Fi Calling is currently turned {'ON' if self.device['wifi_calling_enabled'] else 'OFF'}."

    def check_vpn_status(self) -> str:
        d = self.device
        if d["vpn_connected"]:
            if d["vpn_details"]:
                return f"VPN is ON and connected. Details: {d['vpn_details']}"
            return "VPN is ON and connected (no specific details available)."
        if d["vpn_enabled_setting"]:
            return "VPN is turned ON in settings, but currently not connected."
        return "VPN is turned OFF."

    def check_installed_apps(self) -> str:
        return f"The following apps are installed on the phone: {', '.join(self.device['app_statuses'])}"

    def _granted(self, app_name: str) -> list[str] | None:
        app = self.device["app_statuses"].get(app_name)
        if app is None:
            return None
        return [p.replace("_", " ").lower() for p, on in app["permissions"].items() if on]

    def check_app_status(self, app_name: str) -> str:
        granted = self._granted(app_name)
        if granted is None:
            return f"App '{app_name}' not found on this phone."
        if not granted:
            return f"Status for App: {app_name}\n - Permissions: None granted."
        return "\n".join([f"Status for App: {app_name}", " - Permissions Granted:", *(f"   - {p}" for p in granted)])

    def check_app_permissions(self, app_name: str) -> str:
        granted = self._granted(app_name)
        if granted is None:
            return f"App '{app_name}' not found on this phone."
        if not granted:
            return f"App '{app_name}' currently has no permissions granted."
        return f"App '{app_name}' has permission for: {', '.join(granted)}."

    def can_send_mms(self) -> str:
        return f"Your messaging app {'can' if self._can_send_mms() else 'cannot'} send MMS messages."

    def check_payment_request(self) -> str:
        request = self.surroundings["payment_request"]
        if request is None:
            return "No payment request has been made."
        return f"You have a payment request for bill {request['bill_id']} of {request['amount_due']} USD."

    # write tools
    def set_network_mode_preference(self, mode: str) -> str:
        if mode not in NETWORK_MODES:
            return self._with_bar(f"Failed to set network mode: '{mode}' is not a valid option. "
                                  f"Please use one of: {', '.join(NETWORK_MODES)}")
        self.device["network_mode_preference"] = mode
        self.simulate_network_search()
        return self._with_bar(f"Preferred Network Mode set to: {mode}")

    def _airplane(self) -> bool:
        d = self.device
        was_on = d["airplane_mode"]
        d["airplane_mode"] = not was_on
        if was_on:
            d["network_connection_status"] = "searching"
        if not was_on or d["wifi_enabled"]:  # going on, or off with the Wi-Fi radio on: Wi-Fi dropped
            d.update(wifi_connected=False, wifi_ssid=None, wifi_signal_strength="none")
        if not was_on and d["vpn_connected"]:
            d.update(vpn_connected=False, vpn_details=None)
        self.simulate_network_search()
        return d["airplane_mode"]

    def toggle_airplane_mode(self) -> str:
        return self._with_bar(f"Airplane Mode is now {'ON' if self._airplane() else 'OFF'}.")

    def reseat_sim_card(self) -> str:
        self.device["sim_card_missing"] = False
        self.simulate_network_search()
        return self._with_bar("SIM card re-seated successfully.")

    def toggle_data(self) -> str:
        return self._with_bar(f"Mobile Data is now {'ON' if self._flip('data_enabled') else 'OFF'}.")

    def toggle_roaming(self) -> str:
        return self._with_bar(f"Data Roaming is now {'ON' if self._flip('roaming_enabled') else 'OFF'}.")

    def toggle_data_saver_mode(self) -> str:
        return self._with_bar(f"Data Saver Mode is now {'ON' if self._flip('data_saver_mode', search=False) else 'OFF'}.")

    def set_apn_settings(self, apn_settings: dict[str, Any]) -> str:
        settings = {**default_apn_settings(), **apn_settings}
        self.device["active_apn_settings"] = settings
        self.simulate_network_search()
        return self._with_bar(f"APN settings set to: {settings['apn_name']}")

    def reset_apn_settings(self) -> str:
        self.device["active_apn_settings"]["reset_at_reboot"] = True
        self.simulate_network_search()
        return self._with_bar("APN settings will reset at reboot.")

    def toggle_wifi(self) -> str:
        d = self.device
        if d["airplane_mode"]:
            return self._with_bar("Cannot change Wi-Fi settings while Airplane Mode is ON.")
        d["wifi_enabled"] = not d["wifi_enabled"]
        if not d["wifi_enabled"]:
            d.update(wifi_connected=False, wifi_ssid=None, wifi_signal_strength="none")
        return self._with_bar(f"Wi-Fi is now {'ON' if d['wifi_enabled'] else 'OFF'}.")

    def toggle_wifi_calling(self) -> str:
        on = self._flip("wifi_calling_enabled", search=False)
        return self._with_bar(f"Wi-Fi Calling is now {'ON' if on else 'OFF'}.")

    def connect_vpn(self) -> str:
        d = self.device
        if d["vpn_connected"]:
            return "VPN already connected."
        d.update(vpn_connected=True, vpn_details=dict(self.DEFAULT_VPN))
        return self._with_bar("VPN connected successfully.")

    def disconnect_vpn(self) -> str:
        d = self.device
        was = bool(d["vpn_connected"])
        if was:
            d.update(vpn_connected=False, vpn_details=None)
        return self._with_bar("VPN disconnected successfully." if was else "No active VPN connection to disconnect.")

    def grant_app_permission(self, app_name: str, permission: str) -> str:
        app = self.device["app_statuses"].get(app_name)
        permission = permission.lower()
        if app is None:
            ok, text = False, f"App '{app_name}' not found. Cannot grant permission."
        elif permission not in app["permissions"]:
            ok, text = False, (f"Permission '{permission}' not tracked for app '{app_name}', available permissions: "
                               f"{list(app['permissions'])}")
        else:
            app["permissions"][permission] = True
            ok, text = True, f"Permission '{permission}' granted to app '{app_name}'."
        return self._with_bar(f"{'Success' if ok else 'Error'}. {text}")

    def reboot_device(self) -> str:
        d, lines = self.device, []
        if d["active_apn_settings"].get("reset_at_reboot"):
            lines.append("Resetting APN settings...")
            d["active_apn_settings"] = default_apn_settings()
        lines.append("Restarting network services...")
        d["network_connection_status"] = "searching"
        self.simulate_network_search()
        return self._with_bar("\n".join(lines))

    def make_payment(self) -> str:
        request = self.surroundings["payment_request"]
        if request is None:
            return "You do not have a payment request."
        request["paid"] = True
        return f"Payment of {request['amount_due']} USD has been made for bill {request['bill_id']}."

    # environment functions: the scenario, breaking the phone
    def set_user_info(self, name: str, phone_number: str) -> None:
        self.surroundings.update(name=name, phone_number=phone_number)

    def set_user_location(self, abroad: bool) -> None:
        self.surroundings["is_abroad"] = abroad

    def turn_airplane_mode_on(self) -> str:
        if not self._airplane():
            self._airplane()
        return "Airplane Mode is now ON."

    def turn_airplane_mode_off(self) -> str:
        if self._airplane():
            self._airplane()
        return "Airplane Mode is now OFF."

    def unseat_sim_card(self) -> str:
        self.device["sim_card_missing"] = True
        self.simulate_network_search()
        return "SIM card un-seated successfully."

    def lock_sim_card(self, mode: str) -> str:
        if mode in ("pin", "puk"):
            self.device["sim_card_status"] = f"locked_{mode}"
        self.simulate_network_search()
        return f"SIM card locked successfully in {mode} mode."

    def turn_data_on(self) -> str:
        self.device["data_enabled"] = True  # no network search, as in the benchmark
        return "Data connection restored."

    def turn_data_off(self) -> str:
        if self._flip("data_enabled"):
            self._flip("data_enabled")
        return "Data connection broken."

    def turn_roaming_on(self) -> str:
        if not self._flip("roaming_enabled"):
            self._flip("roaming_enabled")
        return "Data Roaming is now ON."

    def turn_roaming_off(self) -> str:
        if self._flip("roaming_enabled"):
            self._flip("roaming_enabled")
        return "Data Roaming is now OFF."

    def turn_data_saver_mode_on(self) -> str:
        self.device["data_saver_mode"] = True
        return "Data Saver Mode is now ON."

    def turn_data_saver_mode_off(self) -> str:
        self.device["data_saver_mode"] = False
        return "Data Saver Mode is now OFF."

    def break_apn_settings(self) -> str:
        self.device["active_apn_settings"]["apn_name"] = "broken"
        self.simulate_network_search()
        return "APN settings broken. Please call reset_apn_settings() to fix."

    def break_apn_mms_setting(self) -> str:
        self.device["active_apn_settings"]["mmsc_url"] = None
        return "APN MMS setting broken. Please call reset_apn_settings() to fix."

    def set_wifi_calling(self, enabled: bool, mms_over_wifi: bool | None = None) -> str:
        self.device["wifi_calling_enabled"] = enabled
        text = f"Wi-Fi Calling is now {'ON' if enabled else 'OFF'}."
        if mms_over_wifi is not None:
            self.device["wifi_calling_mms_over_wifi"] = mms_over_wifi
            text += f"\nMMS over Wi-Fi is now {'ON' if mms_over_wifi else 'OFF'}."
        return text

    def break_vpn(self) -> str:
        self.connect_vpn()
        if self.device["vpn_details"] is not None:
            self.device["vpn_details"]["server_performance"] = "poor"
        return "VPN connection broken."

    def remove_app_permission(self, app_name: str, permission: str) -> tuple[bool, str]:
        app = self.device["app_statuses"].get(app_name)
        permission = permission.lower()
        if app is None:
            return False, f"App '{app_name}' not found. Cannot remove permission."
        if permission not in app["permissions"]:
            return False, f"Permission '{permission}' not tracked for app '{app_name}'."
        app["permissions"][permission] = False
        return True, f"Permission '{permission}' removed from app '{app_name}'."

    # environment functions: assertions
    def assert_airplane_mode_status(self, expected_status: bool) -> bool:
        return self.device["airplane_mode"] == expected_status

    def assert_service_status(self, expected_status: str) -> bool:
        return self.device["network_connection_status"] == expected_status

    def assert_mobile_data_status(self, expected_status: bool) -> bool:
        return self._mobile_data_working() == expected_status

    def assert_mobile_roaming_status(self, expected_status: bool) -> bool:
        return self.device["roaming_enabled"] == expected_status

    def assert_mobile_data_saver_mode_status(self, expected_status: bool) -> bool:
        return self.device["data_saver_mode"] == expected_status

    def assert_internet_speed(self, expected_speed: float, expected_desc: str | None = None) -> bool:
        speed, text = self._speed()
        speed = speed or 0.0
        return speed >= expected_speed and (expected_desc is None or text.lower() == expected_desc.lower())

    def assert_internet_not_excellent(self) -> bool:
        return self._speed()[1].lower() != "excellent"

    def assert_can_send_mms(self, expected_status: bool) -> bool:
        return self._can_send_mms() == expected_status

    def assert_mobile_data_usage_exceeded(self, expected_status: bool) -> bool:
        return self.surroundings["mobile_data_usage_exceeded"] == expected_status


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


_NO_ARGS: dict[str, tuple[str | dict[str, Any], str]] = {}
_APN = {"type": "object", "additionalProperties": False, "properties": {
    "apn_name": {"type": "string", "enum": ["internet", "broken"], "description": "the APN's name"},
    "reset_at_reboot": {"type": "boolean", "description": "reset the APN settings at the next reboot"},
    "mms_apn": {"type": ["string", "null"], "description": "the APN used for MMS"},
    "mmsc_url": {"type": ["string", "null"], "description": "the MMS service centre's URL (MMS needs it)"},
    "mms_proxy": {"type": ["string", "null"], "description": "the MMS proxy, if any"},
    "mms_port": {"type": ["integer", "null"], "description": "the MMS proxy's port, if any"}}}
_APP = {"app_name": (_S, "the app's name, such as 'messaging'")}
#: The telecom user's tools (the benchmark's whole user tool set), with the OpenAI-format
#: declarations the simulated user is given; a call's arguments are checked against them.
TELECOM_USER_TOOLS: dict[str, dict[str, Any]] = {t["function"]["name"]: t for t in [
    _fn("check_status_bar", "Show the icons of your phone's status bar: signal, network type, mobile data (on, "
        "off, data saver), Wi-Fi, VPN, battery."),
    _fn("check_network_status", "Show your phone's connection: airplane mode, SIM, cellular connection, signal and "
        "network type, mobile data, data roaming, Wi-Fi."),
    _fn("check_network_mode_preference", "Show which cellular network type your phone prefers."),
    _fn("set_network_mode_preference", "Change the cellular network type your phone prefers; faster types (4G/5G) "
        "give faster data.", mode=(_S, "one of '4g_5g_preferred', '4g_only', '3g_only', '2g_only'")),
    _fn("run_speed_test", "Measure your mobile internet download speed and say what it is good for."),
    _fn("toggle_airplane_mode", "Turn Airplane Mode on or off (on cuts every radio: cellular, Wi-Fi, Bluetooth)."),
    _fn("check_sim_status", "Show whether your SIM card works, is missing, or is locked with a PIN or PUK."),
    _fn("reseat_sim_card", "Take the SIM card out and put it back in."),
    _fn("toggle_data", "Turn mobile data on or off."),
    _fn("toggle_roaming", "Turn data roaming on or off (needed for mobile data outside your carrier's network)."),
    _fn("check_data_restriction_status", "Show whether Data Saver mode is limiting your data."),
    _fn("toggle_data_saver_mode", "Turn Data Saver mode on or off (it saves data and slows it)."),
    _fn("check_apn_settings", "Show the APN settings your phone uses for mobile data and picture messages (MMS)."),
    _fn("set_apn_settings", "Replace your phone's APN settings (fields left out take their default).",
        apn_settings=(_APN, "the new APN settings")),
    _fn("reset_apn_settings", "Reset your APN settings to the defaults (applied at the next reboot)."),
    _fn("check_wifi_status", "Show whether Wi-Fi is on, the network it is connected to, and its signal."),
    _fn("toggle_wifi", "Turn the Wi-Fi radio on or off."),
    _fn("check_wifi_calling_status", "Show whether Wi-Fi Calling (calls over Wi-Fi instead of cellular) is on."),
    _fn("toggle_wifi_calling", "Turn Wi-Fi Calling on or off."),
    _fn("check_vpn_status", "Show whether a VPN is on and connected, with its details."),
    _fn("connect_vpn", "Connect your VPN."),
    _fn("disconnect_vpn", "Disconnect your VPN (it may slow your connection or change what you can reach)."),
    _fn("check_installed_apps", "List the apps installed on your phone."),
    _fn("check_app_status", "Show an app's details: the permissions it has.", **_APP),
    _fn("check_app_permissions", "Show which permissions an app has (such as storage, sms, phone, network).", **_APP),
    _fn("grant_app_permission", "Give an app a permission it needs.", **_APP,
        permission=(_S, "the permission, lowercase, such as 'storage' or 'sms'")),
    _fn("can_send_mms", "Check whether your messaging app can send MMS (picture) messages."),
    _fn("reboot_device", "Restart your phone (clears many temporary glitches; applies a pending APN reset)."),
    _fn("check_payment_request", "Check whether the agent has sent you a payment request."),
    _fn("make_payment", "Pay the bill of the payment request the agent sent you."),
]}
