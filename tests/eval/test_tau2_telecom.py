"""The tau2_bench adapter's telecom domain (dual control): the agent's tools on a telecom
database written here in the benchmark's layout, the user's phone and its tools, the sync
between them, env assertions, and whole conversations through the harness.

The agent under test answers from a script (the replay backend, through the harness); the
simulated user is the ``openai`` backend talking to an OpenAI-compatible HTTP double that
answers each request with the next scripted turn: a message, or tool calls on the phone."""

from __future__ import annotations

import copy
import inspect
import json
import re
from pathlib import Path

import pytest
from spade_core.actions import ToolCall, format_tool_calls
from spade_core.app.cli import build_app
from spade_core.evaluation import SuiteContext
from spade_designer.llm.openai_backend import OpenAIBackend
from spade_designer.llm.replay import ReplayBackend
from spade_eval.harness import evaluate
from typer.testing import CliRunner

from spade_eval import tau2

from .tau2_scripts import ScriptedEndpoint, play_scripts, write_domain

CTX = SuiteContext(None, None)

#: The benchmark's published telecom tool sets: the agent's and the user's.
PUBLISHED_AGENT_TOOLS = {
    "get_customer_by_phone", "get_customer_by_id", "get_customer_by_name", "get_details_by_id", "suspend_line",
    "resume_line", "get_bills_for_customer", "send_payment_request", "get_data_usage", "enable_roaming",
    "disable_roaming", "transfer_to_human_agents", "refuel_data"}
PUBLISHED_USER_TOOLS = {
    "check_status_bar", "check_network_status", "check_network_mode_preference", "set_network_mode_preference",
    "run_speed_test", "toggle_airplane_mode", "check_sim_status", "reseat_sim_card", "toggle_data", "toggle_roaming",
    "check_data_restriction_status", "toggle_data_saver_mode", "check_apn_settings", "set_apn_settings",
    "reset_apn_settings", "check_wifi_status", "toggle_wifi", "check_wifi_calling_status", "toggle_wifi_calling",
    "check_vpn_status", "connect_vpn", "disconnect_vpn", "check_installed_apps", "check_app_status",
    "check_app_permissions", "grant_app_permission", "can_send_mms", "reboot_device", "check_payment_request",
    "make_payment"}

MAYA, MAYA_PHONE, OMAR, OMAR_PHONE = "Maya Lin", "555-201-0001", "Omar Diaz", "555-201-0002"


def _line(line_id: str, phone: str, plan: str, used: float) -> dict:
    return {"line_id": line_id, "phone_number": phone, "status": "Active", "plan_id": plan, "device_id": None,
            "data_used_gb": used, "data_refueling_gb": 0.0, "roaming_enabled": False,
            "contract_end_date": "2025-12-31", "last_plan_change_date": None, "last_sim_replacement_date": None,
            "suspension_start_date": None}


def _customer(customer_id: str, name: str, dob: str, phone: str, lines: list[str], bills: list[str]) -> dict:
    return {"customer_id": customer_id, "full_name": name, "date_of_birth": dob,
            "email": f"{name.split()[0].lower()}@example.com", "phone_number": phone,
            "address": {"street": "12 Birch Rd", "city": "Dayton", "state": "OH", "zip_code": "45402"},
            "account_status": "Active",
            "payment_methods": [{"method_type": "Credit Card", "account_number_last_4": "4242",
                                 "expiration_date": "09/2027"}],
            "line_ids": lines, "bill_ids": bills, "created_at": "2024-06-01T10:00:00", "last_extension_date": None,
            "goodwill_credit_used_this_year": 0.0}


def _bill(bill_id: str, customer_id: str, status: str) -> dict:
    return {"bill_id": bill_id, "customer_id": customer_id, "period_start": "2025-01-01",
            "period_end": "2025-01-31", "issue_date": "2025-02-01", "total_due": 30.0, "due_date": "2025-02-15",
            "line_items": [{"description": "Plan charge", "amount": 30.0, "date": "2025-02-01",
                            "item_type": "Plan Charge"}], "status": status}


DB = {
    "plans": [{"plan_id": "P1001", "name": "Basic 5 GB", "data_limit_gb": 5.0, "price_per_month": 30.0,
               "data_refueling_price_per_gb": 2.0},
              {"plan_id": "P1002", "name": "Plus 20 GB", "data_limit_gb": 20.0, "price_per_month": 55.0,
               "data_refueling_price_per_gb": 1.5}],
    "customers": [_customer("C1001", MAYA, "1988-04-12", MAYA_PHONE, ["L1001", "L1002"], ["B1001"]),
                  _customer("C1002", OMAR, "1979-11-30", OMAR_PHONE, ["L1003"], ["B1002"])],
    "lines": [_line("L1001", MAYA_PHONE, "P1001", 3.2), _line("L1002", "555-201-0011", "P1002", 1.0),
              _line("L1003", OMAR_PHONE, "P1001", 2.5)],
    "bills": [_bill("B1001", "C1001", "Paid"), _bill("B1002", "C1002", "Paid")],
    "devices": [{"device_id": "D1001", "device_type": "phone", "model": "Pixel 8", "imei": "356938035643809",
                 "is_esim_capable": True, "activated": True, "activation_date": "2024-06-01T10:30:00",
                 "last_esim_transfer_date": None}],
}

POLICY = """# Telecom agent policy (written for these tests)
Identify the customer by phone number first. Diagnose the user's phone by asking them to check or
change one setting at a time. Roaming, data refueling and payment requests are done on the account;
a suspended line is resumed only once its overdue bill is paid. A locked SIM card goes to a human agent.
"""

AIRPLANE = "[service_issue]airplane_mode_on[PERSONA:None]"
ROAMING = "[mobile_data_issue]user_abroad_roaming_disabled_off[PERSONA:None]"
REFUEL = "[mobile_data_issue]data_usage_exceeded[PERSONA:None]"
OVERDUE = "[service_issue]overdue_bill_suspension[PERSONA:None]"
STORAGE = "[mms_issue]break_app_storage_permission[PERSONA:None]"
APN = "[mms_issue]break_apn_mms_setting[PERSONA:None]"
PIN = "[service_issue]lock_sim_card_pin[PERSONA:None]"


def _do(side: str, func: str, **arguments) -> dict:
    return {"env_type": side, "func_name": func, "arguments": arguments}


def _assert(side: str, func: str, **arguments) -> dict:
    return {**_do(side, func, **arguments), "assert_value": True, "message": None}


def _act(k: int, requestor: str, name: str, compare_args: list[str] | None = None, **arguments) -> dict:
    return {"action_id": f"{name}_{k}", "requestor": requestor, "name": name, "arguments": arguments, "info": None,
            "compare_args": compare_args}


def _task(task_id: str, name: str, phone: str, reason: str, init: list[dict], actions: list[dict],
          assertions: list[dict], basis: list[str]) -> dict:
    return {
        "id": task_id,
        "description": {"purpose": "written for this adapter's tests", "relevant_policies": None, "notes": None},
        "user_scenario": {"persona": None, "instructions": {
            "domain": "telecom", "reason_for_call": reason, "known_info": f"You are {name} with phone number {phone}.",
            "unknown_info": None,
            "task_instructions": "Do what the agent asks on your phone, one step at a time, and answer from what "
                                 "your tools show. End the conversation once the issue is fixed."}},
        "ticket": reason,
        "initial_state": {"initialization_data": None,
                          "initialization_actions": [_do("user", "set_user_info", name=name, phone_number=phone),
                                                     *init],
                          "message_history": None},
        "evaluation_criteria": {"actions": actions, "env_assertions": assertions, "communicate_info": None,
                                "nl_assertions": None, "reward_basis": basis},
    }


CONNECTED = _assert("user", "assert_service_status", expected_status="connected")
DATA_WORKS = [_assert("user", "assert_mobile_data_status", expected_status=True),
              _assert("user", "assert_internet_speed", expected_speed=200, expected_desc="excellent")]
CAN_MMS = _assert("user", "assert_can_send_mms", expected_status=True)

TASKS = [
    _task(AIRPLANE, MAYA, MAYA_PHONE, "Your phone has shown 'No Service' for a few hours.",
          [_do("user", "turn_airplane_mode_on")], [_act(0, "user", "toggle_airplane_mode")], [CONNECTED],
          ["DB", "ENV_ASSERTION"]),
    _task(ROAMING, MAYA, MAYA_PHONE, "Your mobile data does not work; you are abroad in France.",
          [_do("user", "set_user_location", abroad=True), _do("user", "turn_roaming_off"),
           _do("assistant", "disable_roaming", customer_id="C1001", line_id="L1001"),
           _do("user", "simulate_network_search")],
          [_act(0, "assistant", "enable_roaming", customer_id="C1001", line_id="L1001"),
           _act(1, "user", "toggle_roaming")], DATA_WORKS, ["ENV_ASSERTION"]),
    _task(REFUEL, OMAR, OMAR_PHONE, "Your mobile data stopped; you accept to refuel 2.0 GB.",
          [_do("assistant", "set_data_usage", customer_id="C1002", line_id="L1003", data_used_gb=5.1)],
          [_act(0, "assistant", "refuel_data", customer_id="C1002", line_id="L1003", gb_amount=2.0)],
          [*DATA_WORKS, _assert("assistant", "assert_data_refueling_amount", customer_id="C1002", line_id="L1003",
                                expected_amount=2.0)], ["ENV_ASSERTION"]),
    _task(OVERDUE, OMAR, OMAR_PHONE, "Your phone shows 'No Service'. If asked to pay a bill, you accept.",
          [_do("assistant", "suspend_line_for_overdue_bill", customer_id="C1002", line_id="L1003",
               new_bill_id="B1234321", contract_ended=False), _do("user", "simulate_network_search")],
          [_act(0, "assistant", "send_payment_request", customer_id="C1002", bill_id="B1234321"),
           _act(1, "user", "make_payment"), _act(2, "assistant", "resume_line", customer_id="C1002", line_id="L1003"),
           _act(3, "user", "reboot_device")],
          [CONNECTED, _assert("assistant", "assert_no_overdue_bill", overdue_bill_id="B1234321")], ["ENV_ASSERTION"]),
    _task(STORAGE, MAYA, MAYA_PHONE, "You cannot send MMS messages.",
          [_do("user", "remove_app_permission", app_name="messaging", permission="storage")],
          [_act(0, "user", "grant_app_permission", app_name="messaging", permission="storage")], [CAN_MMS],
          ["ENV_ASSERTION"]),
    _task(APN, MAYA, MAYA_PHONE, "You cannot send MMS messages.", [_do("user", "break_apn_mms_setting")],
          [_act(0, "user", "reset_apn_settings"), _act(1, "user", "reboot_device")], [CAN_MMS], ["ENV_ASSERTION"]),
    _task(PIN, MAYA, MAYA_PHONE, "Your phone shows 'No Service'.", [_do("user", "lock_sim_card", mode="pin")],
          [_act(0, "assistant", "transfer_to_human_agents", compare_args=[], summary="I cannot fix the issue.")],
          [_assert("user", "assert_service_status", expected_status="no_service")], ["DB", "ENV_ASSERTION", "ACTION"]),
]


def call(name: str, **arguments) -> str:
    return format_tool_calls([ToolCall(name, arguments)])


def use(name: str, **arguments) -> list[tuple[str, dict]]:
    """A user turn of one tool call on the phone."""
    return [(name, arguments)]


#: Per task: the agent's messages (each a step) and the user's turns (a message, or tool
#: calls; the first answers the agent's greeting).
REFERENCE: dict[str, tuple[list[str], list]] = {
    AIRPLANE: ([call("get_customer_by_phone", phone_number=MAYA_PHONE),
                "Thank you, Maya. Please check your status bar and tell me what it shows.",
                "Airplane mode is on. Please turn it off.",
                "Service is back. Is there anything else?"],
               [f"Hi, my phone shows No Service. My number is {MAYA_PHONE}.",
                use("check_status_bar"), "It shows an airplane.",
                use("toggle_airplane_mode"), "Done: it now shows 5G with excellent signal.",
                "No, thanks. ###STOP###"]),
    ROAMING: ([call("get_customer_by_phone", phone_number=MAYA_PHONE),
               call("get_details_by_id", id="L1001"),
               call("enable_roaming", customer_id="C1001", line_id="L1001"),
               "I enabled roaming on your line. Please turn on data roaming on your phone.",
               "Please run a speed test.",
               "Glad it works."],
              [f"My mobile data does not work. I'm in France; my number is {MAYA_PHONE}.",
               use("toggle_roaming"), "Data roaming is on now.",
               use("run_speed_test"), "The speed test says 275 Mbps, excellent.",
               "Thanks! ###STOP###"]),
    REFUEL: ([call("get_customer_by_phone", phone_number=OMAR_PHONE),
              call("get_data_usage", customer_id="C1002", line_id="L1003"),
              "You used 5.1 GB of your 5 GB. I can add 2 GB for $4.00. Shall I?",
              call("refuel_data", customer_id="C1002", line_id="L1003", gb_amount=2.0),
              "Done. Please run a speed test.",
              "Great."],
             [f"My mobile data stopped working. Number {OMAR_PHONE}.", "Yes, add 2 GB.",
              use("run_speed_test"), "Excellent now: 275 Mbps.", "###STOP###"]),
    OVERDUE: ([call("get_customer_by_phone", phone_number=OMAR_PHONE),
               call("get_bills_for_customer", customer_id="C1002"),
               "Your line is suspended for the overdue bill B1234321 of $30. I can send you a payment request.",
               call("send_payment_request", customer_id="C1002", bill_id="B1234321"),
               "I sent it. Please check your payment requests and pay it.",
               call("get_details_by_id", id="B1234321"),
               call("resume_line", customer_id="C1002", line_id="L1003"),
               "Your line is active again. Please restart your phone."],
              [f"My phone has No Service. I'm {OMAR}, {OMAR_PHONE}.", "Yes, please send it.",
               [("check_payment_request", {}), ("make_payment", {})], "I paid it.",
               use("reboot_device"), use("check_status_bar"), "It shows signal now, thanks. ###STOP###"]),
    STORAGE: ([call("get_customer_by_phone", phone_number=MAYA_PHONE),
               "Please check which permissions your messaging app has.",
               "It needs storage: please grant it, then check whether you can send MMS."],
              [f"I can't send picture messages. {MAYA_PHONE}.",
               use("check_app_permissions", app_name="messaging"), "It has sms and phone.",
               use("grant_app_permission", app_name="messaging", permission="storage"), use("can_send_mms"),
               "It works now! ###STOP###"]),
    APN: ([call("get_customer_by_phone", phone_number=MAYA_PHONE),
           "Please check your APN settings.",
           "Your MMS address is missing: reset your APN settings, then restart the phone.",
           "Can you send MMS now?"],
          [f"I can't send MMS. {MAYA_PHONE}.", use("check_apn_settings"), "The MMSC URL is not set.",
           use("reset_apn_settings"), use("reboot_device"), "Done, restarted.",
           use("can_send_mms"), "Yes, it works. ###STOP###"]),
    PIN: ([call("get_customer_by_phone", phone_number=MAYA_PHONE),
           "Please check your SIM card status.",
           call("transfer_to_human_agents", summary="The SIM card is locked with a PIN."),
           "Your SIM is PIN-locked; I am transferring you to a human agent."],
          [f"No Service on my phone. {MAYA_PHONE}.", use("check_sim_status"), "It is locked with a PIN code.",
           "###TRANSFER###"]),
}


@pytest.fixture
def domains(tmp_path: Path) -> Path:
    return write_domain(tmp_path / "domains", "telecom", TASKS, DB, POLICY)


def play(domains: Path, scripts: dict[str, tuple[list[str], list]], *, size: int = 1, **options):
    """:func:`.tau2_scripts.play_scripts` with the user behind :class:`ScriptedEndpoint` (it may
    call tools): (result, agent backend, endpoint, items)."""

    def endpoint_user(said: list) -> tuple[OpenAIBackend, ScriptedEndpoint]:
        endpoint = ScriptedEndpoint(said)
        return endpoint.backend(), endpoint

    return play_scripts(domains, scripts, size=size, user=endpoint_user, **options)


def phone(**surroundings) -> tau2.TelecomUserTools:
    db = tau2.default_telecom_user_db()
    db["surroundings"].update(surroundings)
    return tau2.TelecomUserTools(db)


def world(task_id: str) -> tau2.World:
    index = next(i for i, t in enumerate(TASKS) if t["id"] == task_id)
    task = tau2.parse_task(TASKS[index], domain="telecom", path=Path("telecom/tasks.json"), index=index)
    return tau2.make_world(task, copy.deepcopy(DB))


# -- the declarations and the implementations -----------------------------------------------------


def test_every_declared_tool_is_implemented_and_every_implemented_one_declared() -> None:
    assert set(tau2.TELECOM_TOOLS) == PUBLISHED_AGENT_TOOLS
    assert set(tau2.TELECOM_USER_TOOLS) == PUBLISHED_USER_TOOLS
    assert tau2.DOMAINS["telecom"] == (tau2.TelecomTools, tau2.TELECOM_TOOLS)
    assert tau2.NOT_IMPLEMENTED["telecom"] == tau2.TELECOM_NOT_IMPLEMENTED == ()
    side = tau2.USER_SIDES["telecom"]
    assert (side.tools, side.declared) == (tau2.TelecomUserTools, tau2.TELECOM_USER_TOOLS)
    for cls, declared in (tau2.TelecomTools, tau2.TELECOM_TOOLS), (tau2.TelecomUserTools, tau2.TELECOM_USER_TOOLS):
        public = {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}
        env_functions = set(cls.ENV_FUNCTIONS)
        assert env_functions <= public and env_functions.isdisjoint(declared), cls
        assert public - env_functions == set(declared), cls
        for name, decl in declared.items():
            assert decl["type"] == "function" and decl["function"]["name"] == name and decl["function"]["description"]
            params = decl["function"]["parameters"]
            signature = inspect.signature(getattr(cls, name)).parameters
            names = [p for p in signature if p != "self"]
            assert list(params["properties"]) == names, name
            required = [p for p in names if signature[p].default is inspect.Parameter.empty]
            assert params["required"] == required, name
            assert all(p.get("description") for p in params["properties"].values()), name
    # the functions the benchmark's telecom task files call by name are all here
    for side_name, functions in (("assistant", {"enable_roaming", "disable_roaming", "set_data_usage", "refuel_data",
                                                "suspend_line_for_overdue_bill", "assert_data_refueling_amount",
                                                "assert_line_status", "assert_overdue_bill_exists",
                                                "assert_no_overdue_bill"}),
                                 ("user", {"set_user_info", "set_user_location", "turn_roaming_off", "turn_roaming_on",
                                           "simulate_network_search", "turn_airplane_mode_on", "unseat_sim_card",
                                           "lock_sim_card", "break_apn_settings", "turn_data_off",
                                           "turn_data_saver_mode_on", "set_network_mode_preference", "break_vpn",
                                           "set_wifi_calling", "break_apn_mms_setting", "remove_app_permission",
                                           "assert_service_status", "assert_mobile_data_status",
                                           "assert_internet_speed", "assert_can_send_mms",
                                           "assert_airplane_mode_status", "assert_mobile_roaming_status",
                                           "assert_mobile_data_saver_mode_status", "assert_internet_not_excellent",
                                           "assert_mobile_data_usage_exceeded"})):
        assert functions <= tau2.side_functions("telecom", side_name), side_name


# -- the phone, the agent's tools and the sync ----------------------------------------------------


def test_the_phone_behaves_as_the_benchmarks() -> None:
    p = phone()
    # the default phone: 5G at good signal until a network search finds the excellent 5G around
    assert p.run_speed_test().startswith("Speed Test Result: 220.00 Mbps (Excellent).")
    assert p.check_status_bar() == "Status Bar: 📶³ Good | 5G | 📱 Data Enabled | 🔋 80%"
    p.simulate_network_search()
    assert p.run_speed_test() == "Speed Test Result: 275.00 Mbps (Excellent). Connection is very fast."
    assert p.turn_airplane_mode_on() == "Airplane Mode is now ON."
    assert p.check_status_bar() == "Status Bar: ✈️ Airplane Mode | 🔋 80%"
    assert p.assert_service_status("no_service") and p.run_speed_test() == "Speed test failed: No Connection."
    assert p.toggle_wifi().startswith("Cannot change Wi-Fi settings while Airplane Mode is ON.")
    assert p.toggle_airplane_mode().startswith("Airplane Mode is now OFF.\nStatus Bar: 📶⁴ Excellent | 5G")
    assert p.assert_service_status("connected")
    # slow data: data saver, a 2G-only preference, a poor VPN
    p.toggle_data_saver_mode()
    assert p.run_speed_test().startswith("Speed Test Result: 55.00 Mbps (Good).")
    assert "🔽 Data Saver" in p.check_status_bar() and p.assert_internet_not_excellent()
    p.turn_data_saver_mode_off()
    assert p.set_network_mode_preference("2g").startswith("Failed to set network mode: '2g' is not a valid option.")
    p.set_network_mode_preference("2g_only")
    assert p.run_speed_test().startswith("Speed Test Result: 0.05 Mbps (Very Poor).") and not p._can_send_mms()
    p.set_network_mode_preference("4g_5g_preferred")
    p.break_vpn()
    assert p.run_speed_test().startswith("Speed Test Result: 27.50 Mbps (Good).")
    assert "🔒 VPN Connected" in p.check_status_bar()
    assert p.disconnect_vpn().startswith("VPN disconnected successfully.")
    assert p.assert_internet_speed(200, "excellent")
    # SIM, APN, MMS
    p.unseat_sim_card()
    assert p.check_sim_status() == "No SIM card detected in the phone." and p.assert_service_status("no_service")
    assert p.reseat_sim_card().startswith("SIM card re-seated successfully.") and p.assert_service_status("connected")
    p.break_apn_mms_setting()
    assert p.can_send_mms() == "Your messaging app cannot send MMS messages."
    assert p.check_apn_settings().startswith("Current APN Name: internet\nMMSC URL (for picture messages): Not Set")
    p.reset_apn_settings()
    assert not p._can_send_mms()  # the reset waits for the reboot
    assert p.reboot_device().startswith("Resetting APN settings...\nRestarting network services...")
    assert p.can_send_mms() == "Your messaging app can send MMS messages."
    p.set_wifi_calling(True, mms_over_wifi=True)
    assert not p._can_send_mms()
    assert p.toggle_wifi_calling().startswith("Wi-Fi Calling is now OFF.") and p._can_send_mms()
    p.remove_app_permission("messaging", "sms")
    assert p.check_app_permissions("messaging") == "App 'messaging' has permission for: storage, phone."
    assert p.grant_app_permission("messaging", "camera").startswith(
        "Error. Permission 'camera' not tracked for app 'messaging', available permissions: "
        "['sms', 'storage', 'phone', 'network']")
    assert p.grant_app_permission("messaging", "SMS").startswith("Success. Permission 'sms' granted")
    assert p.check_app_status("browser") == "Status for App: browser\n - Permissions Granted:\n   - storage\n   - network"
    p.lock_sim_card("pin")
    assert p.check_sim_status() == "The SIM card is locked with a PIN code." and p.assert_service_status("no_service")
    # abroad: data needs the phone's roaming setting and the line's roaming
    q = phone(is_abroad=True, roaming_allowed=True)
    assert not q.assert_mobile_data_status(True)
    q.toggle_roaming()
    assert q.assert_mobile_data_status(True)
    q.surroundings["roaming_allowed"] = False
    assert q.assert_internet_speed(0, "No Connection")


def test_the_agent_tools_change_the_database_as_the_benchmarks() -> None:
    db = copy.deepcopy(DB)
    kit = tau2.TelecomTools(db)

    def run(name: str, **arguments) -> str:
        text, failed = tau2.run_tool(kit, name, arguments, tau2.TELECOM_TOOLS)
        assert not failed, text
        return text

    def fails(name: str, **arguments) -> str:
        text, failed = tau2.run_tool(kit, name, arguments, tau2.TELECOM_TOOLS)
        assert failed and text.startswith("Error: "), text
        return text

    assert json.loads(run("get_customer_by_phone", phone_number="555-201-0011"))["customer_id"] == "C1001"
    assert fails("get_customer_by_phone", phone_number="5552010011") == \
        "Error: Customer with phone number 5552010011 not found"  # exact, as the benchmark's first version
    assert [c["customer_id"] for c in json.loads(run("get_customer_by_name", full_name="maya lin",
                                                     dob="1988-04-12"))] == ["C1001"]
    assert json.loads(run("get_details_by_id", id="P1002"))["name"] == "Plus 20 GB"
    assert fails("get_details_by_id", id="X1") == "Error: Unknown ID format or type: X1"
    assert fails("get_details_by_id", id="L9999") == "Error: Line with ID L9999 not found"
    assert fails("enable_roaming", customer_id="C1002", line_id="L1001") == \
        "Error: Line L1001 not found for customer C1002"
    assert json.loads(run("get_data_usage", customer_id="C1001", line_id="L1001")) == {
        "line_id": "L1001", "data_used_gb": 3.2, "data_limit_gb": 5.0, "data_refueling_gb": 0.0,
        "cycle_end_date": "2025-02-28"}
    out = json.loads(run("refuel_data", customer_id="C1001", line_id="L1001", gb_amount="2"))
    assert out == {"message": "Successfully added 2.0 GB of data for line L1001 for $4.00",
                   "new_data_refueling_gb": 2.0, "charge": 4.0}
    draft = db["bills"][-1]
    assert draft == {"bill_id": "Bd0000001", "customer_id": "C1001", "period_start": "2025-03-01",
                     "period_end": "2025-03-31", "issue_date": "2025-03-01", "total_due": 4.0,
                     "due_date": "2025-03-15", "status": "Draft",
                     "line_items": [{"description": "Data refueling: 2.0 GB at $2.0/GB", "amount": 4.0,
                                     "date": "2025-02-25", "item_type": "Charge"}]}
    run("refuel_data", customer_id="C1001", line_id="L1001", gb_amount=1.0)  # onto the same draft bill
    assert len(db["bills"]) == 3 and db["bills"][-1]["total_due"] == 6.0 and db["customers"][0]["bill_ids"] == [
        "B1001", "Bd0000001"]
    assert fails("refuel_data", customer_id="C1001", line_id="L1001", gb_amount=0) == \
        "Error: Refuel amount must be positive"
    assert "gb_amount: must be a number" in fails("refuel_data", customer_id="C1001", line_id="L1001", gb_amount="lots")
    assert run("enable_roaming", customer_id="C1001", line_id="L1001") == "Roaming enabled successfully"
    assert run("enable_roaming", customer_id="C1001", line_id="L1001") == "Roaming was already enabled"
    out = json.loads(run("suspend_line", customer_id="C1001", line_id="L1002", reason="travel"))
    assert out["line"]["status"] == "Suspended" and out["line"]["suspension_start_date"] == "2025-02-25"
    assert fails("suspend_line", customer_id="C1001", line_id="L1002", reason="again") == \
        "Error: Line must be active to suspend"
    assert json.loads(run("resume_line", customer_id="C1001", line_id="L1002"))["line"]["suspension_start_date"] is None
    assert run("send_payment_request", customer_id="C1001", bill_id="B1001") == \
        "Payment request sent to the customer for bill B1001"
    assert fails("send_payment_request", customer_id="C1001", bill_id="Bd0000001") == \
        "Error: A bill is already awaiting payment for this customer"
    assert [b["bill_id"] for b in json.loads(run("get_bills_for_customer", customer_id="C1001", limit=1))] == \
        ["Bd0000001"]
    assert run("transfer_to_human_agents", summary="locked SIM") == "Transfer successful"
    kit.suspend_line_for_overdue_bill("C1002", "L1003", "B1234321", True)
    overdue = db["bills"][-1]
    assert (overdue["bill_id"], overdue["status"], overdue["total_due"], overdue["period_start"],
            overdue["due_date"]) == ("B1234321", "Overdue", 30.0, "2025-01-01", "2025-01-15")
    assert db["lines"][2]["contract_end_date"] == "2025-01-31" and kit.assert_overdue_bill_exists("C1002", "B1234321")
    assert not kit.assert_no_overdue_bill("B1234321") and kit.assert_no_overdue_bill("B0000000")


def test_the_sync_carries_the_database_to_the_phone() -> None:
    w = world(OVERDUE)
    s = w.user_tools.surroundings
    assert not s["line_active"] and w.user_tools.assert_service_status("no_service")
    assert s["payment_request"] is None  # an overdue bill is not a payment request
    w.tools.send_payment_request("C1002", "B1234321")
    w.sync()
    assert s["payment_request"] == {"bill_id": "B1234321", "amount_due": 30.0, "paid": False}
    assert w.user_tools.check_payment_request() == "You have a payment request for bill B1234321 of 30.0 USD."
    assert w.user_tools.make_payment() == "Payment of 30.0 USD has been made for bill B1234321."
    w.sync()
    assert w.tools._bill("B1234321")["status"] == "Paid" and s["payment_request"] is None
    w.tools.resume_line("C1002", "L1003")
    w.sync()
    assert s["line_active"] and w.user_tools.assert_service_status("no_service")  # until the phone searches again
    w.user_tools.reboot_device()
    assert w.user_tools.assert_service_status("connected")
    w = world(REFUEL)
    assert w.user_tools.surroundings["mobile_data_usage_exceeded"] and not w.user_tools.assert_mobile_data_status(True)
    w.tools.refuel_data("C1002", "L1003", 2.0)
    w.sync()
    assert w.user_tools.assert_mobile_data_status(True)
    w = world(ROAMING)
    assert not w.user_tools.surroundings["roaming_allowed"]
    w.tools.enable_roaming("C1001", "L1001")
    w.sync()
    assert w.user_tools.surroundings["roaming_allowed"]


# -- through the harness --------------------------------------------------------------------------


def test_the_reference_conversations_score_one_on_every_task_and_trial(domains: Path) -> None:
    result, agent, endpoint, _ = play(domains, REFERENCE, size=2)
    assert [e.label for e in result.episodes] == [f"telecom/{t['id']}" for t in TASKS for _ in range(2)]
    assert all(e.success and e.error is None and e.terminated for e in result.episodes), result.episodes
    assert not endpoint.turns and len(agent.calls) == 2 * sum(len(a) for a, _ in REFERENCE.values())
    column = result.columns["tau2-telecom"]
    assert column.success_rate == 1.0 and column.tasks == len(TASKS) and not column.unavailable
    assert tau2.pass_hat_ks(result.episodes) == {"telecom": {1: 1.0, 2: 1.0}}
    # the user model got its phone's tools with every request, and the tool results of its own calls
    assert all([t["function"]["name"] for t in r["tools"]] == list(tau2.TELECOM_USER_TOOLS) for r in endpoint.requests)
    system = endpoint.requests[0]["messages"][0]["content"]
    assert "tools that act on your own phone" in system and "No Service" in system
    assert any(m["role"] == "tool" and m["content"].startswith("Airplane Mode is now OFF.")
               for r in endpoint.requests for m in r["messages"])
    # the agent saw the policy, its tools (not the user's) and the user's words, never the phone's
    first = agent.calls[0][1]["content"]
    assert "Telecom agent policy" in first and "refuel_data" in first and "toggle_airplane_mode" not in first
    assert MAYA_PHONE in first
    assert not any("Status Bar:" in m["content"] or "Speed Test Result" in m["content"]
                   for conv in agent.calls for m in conv)
    # and the user never saw the agent's tool calls or their results
    assert not any("<tool_call>" in str(m.get("content")) or "C1001" in str(m.get("content"))
                   for r in endpoint.requests for m in r["messages"] if m["role"] != "system")


def _swap(task_id: str, index: int, message: str) -> tuple[list[str], list]:
    agent, said = REFERENCE[task_id]
    return [*agent[:index], message, *agent[index + 1:]], said


#: Wrong behaviour: the agent acts on the wrong line or with the wrong amount, leaves out an
#: action, or does not transfer; the user never fixes the phone or fixes it half.
WRONG: dict[str, tuple[list[str], list]] = {
    "wrong line": _swap(ROAMING, 2, call("enable_roaming", customer_id="C1001", line_id="L1002")),
    "user never toggles roaming": (REFERENCE[ROAMING][0],
                                   [REFERENCE[ROAMING][1][0], "OK, roaming is on.", use("run_speed_test"),
                                    "It says it failed.", "###STOP###"]),
    "wrong amount": _swap(REFUEL, 3, call("refuel_data", customer_id="C1002", line_id="L1003", gb_amount=1.0)),
    "line never resumed": ([*REFERENCE[OVERDUE][0][:6], "Your bill is paid. Please restart your phone."],
                           REFERENCE[OVERDUE][1]),
    "user never fixes the phone": (REFERENCE[AIRPLANE][0],
                                   [REFERENCE[AIRPLANE][1][0], use("check_status_bar"), "It shows an airplane.",
                                    "I'd rather not change anything.", "###STOP###"]),
    "no reboot": (REFERENCE[APN][0],
                  [*REFERENCE[APN][1][:4], "Done.", use("can_send_mms"), "Still no. ###STOP###"]),
    "no transfer": ([*REFERENCE[PIN][0][:2], "Please try restarting the phone; that should help."],
                    [*REFERENCE[PIN][1][:3], "###STOP###"]),
    "extra change on the phone": (REFERENCE[AIRPLANE][0],
                                  [*REFERENCE[AIRPLANE][1][:3], [("toggle_airplane_mode", {}),
                                                                 ("toggle_data_saver_mode", {})],
                                   *REFERENCE[AIRPLANE][1][4:]]),
}
WRONG_TASK = {"wrong line": ROAMING, "user never toggles roaming": ROAMING, "wrong amount": REFUEL,
              "line never resumed": OVERDUE, "user never fixes the phone": AIRPLANE, "no reboot": APN,
              "no transfer": PIN, "extra change on the phone": AIRPLANE}


@pytest.mark.parametrize("case", list(WRONG))
def test_wrong_behaviour_scores_zero(domains: Path, case: str) -> None:
    task_id = WRONG_TASK[case]
    result, agent, endpoint, _ = play(domains, {task_id: WRONG[case]}, ids=task_id)
    (episode,) = result.episodes
    assert episode.episode_return == 0.0 and episode.terminated and episode.error is None, episode
    assert not endpoint.turns and len(agent.calls) == len(WRONG[case][0])  # both scripts played out, in step


def test_the_score_is_the_product_of_db_env_assertions_and_action(domains: Path) -> None:
    def components(task_id: str, script: tuple[list[str], list]) -> tuple[float, dict[str, float]]:
        agent, said = script
        endpoint = ScriptedEndpoint(list(said))
        (item,) = tau2.tau2_items(CTX, data=str(domains), user=endpoint.backend(), ids=task_id)
        env = item.make_env()
        env.reset()
        for message in agent:
            if env._ep.done:
                break
            env.step(message)
        return env.score()

    assert components(AIRPLANE, REFERENCE[AIRPLANE]) == (1.0, {"DB": 1.0, "ENV_ASSERTION": 1.0})
    # data saver on as well: service is back (the assertion holds) but the phone is not the expected one
    assert components(AIRPLANE, WRONG["extra change on the phone"]) == (0.0, {"DB": 0.0, "ENV_ASSERTION": 1.0})
    assert components(AIRPLANE, WRONG["user never fixes the phone"]) == (0.0, {"DB": 0.0, "ENV_ASSERTION": 0.0})
    assert components(PIN, REFERENCE[PIN]) == (1.0, {"DB": 1.0, "ENV_ASSERTION": 1.0, "ACTION": 1.0})
    assert components(PIN, WRONG["no transfer"]) == (0.0, {"DB": 1.0, "ENV_ASSERTION": 1.0, "ACTION": 0.0})
    assert components(REFUEL, WRONG["wrong amount"]) == (0.0, {"ENV_ASSERTION": 0.0})


def test_errors_reach_the_party_that_made_them_and_count_together(domains: Path) -> None:
    agent, said = REFERENCE[STORAGE]
    bad_user = [("fix_my_phone", {}), ("grant_app_permission", {"app_name": "messaging"}),
                ("check_app_status", "{not json")]
    script = ([call("get_customer_by_phone", phone_number="555"), *agent],
              [said[0], bad_user, *said[1:]])
    result, agent_backend, endpoint, _ = play(domains, {STORAGE: script}, ids=STORAGE)
    (episode,) = result.episodes
    assert episode.success, episode  # 4 errors, under the limit: the task still succeeds
    # the user's errors went back to the user, as tool results of its calls
    tool_messages = [m for m in endpoint.requests[2]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == [
        "Error: Tool 'fix_my_phone' not found.", "Error: permission: field required",
        "Error: the arguments of check_app_status are not a JSON object: {not json"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_1", "call_2", "call_3"]
    # the agent's error went to the agent, and the agent never saw the user's
    seen = [conv[-1]["content"] for conv in agent_backend.calls[1:]]
    assert "Error: Customer with phone number 555 not found" in seen[0]
    assert not any("fix_my_phone" in m["content"] for conv in agent_backend.calls for m in conv)
    assert not any("555 not found" in str(m.get("content")) for r in endpoint.requests for m in r["messages"])
    # the agent's and the user's failures count toward the same limit: the tenth ends the episode
    script = ([call("get_customer_by_phone", phone_number="555")] * 4 + ["Please check your permissions."],
              [said[0], [("fix_my_phone", {})] * 6, "unused"])
    result, _, endpoint, _ = play(domains, {STORAGE: script}, ids=STORAGE)
    (episode,) = result.episodes
    assert episode.terminated and episode.episode_return == 0.0 and episode.error is None
    assert list(endpoint.turns) == ["unused"]  # the user was not asked again after the tenth error


def test_no_state_leaks_between_episodes(domains: Path) -> None:
    # every trial changes the phone and the database (airplane mode, roaming, a refuel's draft
    # bill, a payment, a resumed line): anything left over would fail the next trial
    result, _, _, items = play(domains, REFERENCE, size=3)
    assert all(e.success for e in result.episodes), result.episodes
    assert json.loads((domains / "telecom" / "db.json").read_text()) == DB
    env = items[3 * 2].make_env()  # a refuel episode
    assert env.base_db == DB and env.base_user_db == tau2.default_telecom_user_db()
    env.user_backend = ScriptedEndpoint(["hi", "hi"]).backend()
    env.reset()
    env.step(call("refuel_data", customer_id="C1002", line_id="L1003", gb_amount=2.0))
    assert env._ep.db["bills"][-1]["bill_id"] == "Bd0000001" and env.base_db == DB
    assert env._ep.world.user_tools.assert_mobile_data_status(True)
    env.reset()
    assert env._ep.db["bills"] == DB["bills"] and not env._ep.world.user_tools.assert_mobile_data_status(True)
    assert env.base_user_db == tau2.default_telecom_user_db()


def test_what_is_not_implemented_is_reported_by_name(domains: Path, tmp_path: Path) -> None:
    odd = copy.deepcopy(TASKS[0])
    odd["id"] = "battery"
    odd["evaluation_criteria"]["env_assertions"] = [_assert("user", "assert_battery_full")]
    melt = copy.deepcopy(TASKS[0])
    melt["id"] = "melt"
    melt["initial_state"]["initialization_actions"].append(_do("user", "melt_phone"))
    judged = copy.deepcopy(TASKS[0])
    judged["id"] = "judged"
    judged["evaluation_criteria"]["reward_basis"] = ["NL_ASSERTION"]
    judged["evaluation_criteria"]["nl_assertions"] = ["The agent asks the user to check the status bar."]
    (domains / "telecom" / "tasks.json").write_text(json.dumps([odd, melt, judged]))
    retail = tmp_path / "more" / "retail"
    retail.mkdir(parents=True)
    dual = copy.deepcopy(TASKS[0])
    dual["id"] = "dual"
    (retail / "tasks.json").write_text(json.dumps([dual]))
    (retail / "db.json").write_text(json.dumps({"users": {}, "orders": {}, "products": {}}))
    items = [*tau2.tau2_items(CTX, data=str(domains), user=ReplayBackend()),
             *tau2.tau2_items(CTX, data=str(retail), user=ReplayBackend())]
    result = evaluate(ReplayBackend(), items, suite="tau2_bench", concurrency=1)
    errors = {e.label: e.error for e in result.episodes}
    assert "env assertion 0: the user-side function 'assert_battery_full' is not implemented" in errors[
        "telecom/battery"]
    assert "the user-side function 'melt_phone' is not implemented" in errors["telecom/melt"]
    # NL assertions with no judge reachable (the user's replay backend has no endpoint)
    assert errors["telecom/judged"].startswith("JudgeUnavailable: tau2 task telecom/judged: ")
    assert "-o judge=openai:BASE_URL#MODEL" in errors["telecom/judged"]
    assert "user-side actions (dual-control tools) are not implemented for the retail domain" in errors["retail/dual"]
    assert result.columns["tau2-telecom"].unavailable == ["telecom/battery", "telecom/judged", "telecom/melt"]
    # a user backend that cannot make tool calls is named too
    (domains / "telecom" / "tasks.json").write_text(json.dumps(TASKS[:1]))
    items = tau2.tau2_items(CTX, data=str(domains), user=ReplayBackend(["hi"]))
    result = evaluate(ReplayBackend(), items, suite="tau2_bench", concurrency=1)
    assert "needs the openai backend" in result.episodes[0].error


def test_the_published_telecom_layout_loads(tmp_path: Path) -> None:
    folder = tmp_path / "telecom"
    folder.mkdir()
    (folder / "tasks.json").write_text(json.dumps(TASKS))
    toml = ["[[plans]]", 'plan_id = "P1001"', 'name = "Basic 5 GB"', "data_limit_gb = 5.0", "price_per_month = 30.0",
            "data_refueling_price_per_gb = 2.0", ""]
    for customer in DB["customers"][:1]:
        toml += ["[[customers]]", f'customer_id = "{customer["customer_id"]}"', f'full_name = "{customer["full_name"]}"',
                 f'phone_number = "{customer["phone_number"]}"', 'line_ids = ["L1001"]', "bill_ids = []",
                 "created_at = 2024-06-01T10:00:00", ""]
    toml += ["[[lines]]", 'line_id = "L1001"', f'phone_number = "{MAYA_PHONE}"', 'status = "Active"',
             'plan_id = "P1001"', "data_used_gb = 1.0", "data_refueling_gb = 0.0", "roaming_enabled = false",
             "contract_end_date = 2025-12-31", ""]
    (folder / "db.toml").write_text("\n".join(toml))
    (folder / "user_db.toml").write_text("[device]\nbattery_level = 35\n")
    (folder / "main_policy.md").write_text("# Main policy\nBe kind.")
    (folder / "tech_support_manual.md").write_text("# Manual\nCheck the status bar first.")
    (folder / "split_tasks.json").write_text(json.dumps({"base": [AIRPLANE], "small": [AIRPLANE, PIN]}))
    items = tau2.tau2_items(CTX, data=str(folder), user=ReplayBackend(), split="base")
    assert [i.label for i in items] == [f"telecom/{AIRPLANE}"]
    with pytest.raises(tau2.Tau2DataError, match=r"no split 'full' \(splits: base, small\)"):
        tau2.tau2_items(CTX, data=str(folder), user=ReplayBackend(), split="full")
    loaded = tau2.read_domain(folder, "telecom")
    assert loaded["db"]["customers"][0]["created_at"] == "2024-06-01T10:00:00"
    assert loaded["db"]["lines"][0]["contract_end_date"] == "2025-12-31" and loaded["db"]["bills"] == []
    assert loaded["user_db"]["device"]["battery_level"] == 35
    assert loaded["policy"] == ("<main_policy>\n# Main policy\nBe kind.\n</main_policy>\n<tech_support_policy>\n"
                                "# Manual\nCheck the status bar first.\n</tech_support_policy>")
    endpoint = ScriptedEndpoint(["No service here.", use("check_status_bar"), "Airplane. ###STOP###"])
    env = tau2.tau2_items(CTX, data=str(folder), user=endpoint.backend(), split="base")[0].make_env()
    first, _ = env.reset()
    assert "<tech_support_policy>" in first and first.endswith("User: No service here.")
    assert env.step("What does your status bar show?")[0:3] == ("The conversation is over.", 0.0, True)
    bar = [m for m in endpoint.requests[-1]["messages"] if m["role"] == "tool"][0]["content"]
    assert bar == "Status Bar: ✈️ Airplane Mode | 🔋 35%"


def test_spade_eval_prints_the_telecom_column_and_its_pass_hat_k(domains: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPADE_HOME", str(tmp_path / "home"))
    agent, said = REFERENCE[AIRPLANE]
    endpoint = ScriptedEndpoint(said * 2)
    backends = {"agent": ReplayBackend(agent * 2, name="agent"), "user": endpoint.backend()}
    import spade_eval.policy

    monkeypatch.setattr(spade_eval.policy, "make_backend", lambda spec, plugins: backends[spec.options["model"]])
    r = CliRunner().invoke(build_app(), [
        "eval", "--suite", "tau2_bench", "--policy", "openai:http://agent.invalid/v1#agent", "--size", "2",
        "--concurrency", "1", "-o", f"data={domains}", "-o", "domains=telecom", "-o", f"ids={AIRPLANE}",
        "-o", "user=openai:http://user.invalid/v1#user"])
    assert r.exit_code == 0, r.output
    assert "tau2-telecom: pass^1 100.0%, pass^2 100.0%" in r.output
    assert re.search(r"tau2-telecom\W+100\.0%", r.output.split("tau2-telecom: pass^1")[0])  # the columns table
    assert all(r["tools"] for r in endpoint.requests)
