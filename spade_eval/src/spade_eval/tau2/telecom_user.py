"""The telecom user's tools over their phone (:class:`.telecom_phone.TelecomPhone`), written
from the benchmark's user-tool semantics: each tool changes the phone as there, re-runs its
network search where the benchmark does, and answers the user with the same texts (a status
bar after each change); with the declarations the simulated user is given."""

from __future__ import annotations

from typing import Any

from ._common import STRING as _S
from ._common import conform as _conform
from ._common import declare as _fn
from .telecom_phone import (
    NETWORK_MODES,
    TelecomPhone,
    default_apn_settings,
)

_SPEED_ADVICE = {"Very Poor": "Connection is very slow. Basic web browsing might be difficult.",
                 "Poor": "Connection is slow. Web browsing may be sluggish, streaming difficult.",
                 "Fair": "Connection is okay for web browsing and some standard definition streaming.",
                 "Good": "Connection is good for most activities, including HD streaming.",
                 "Excellent": "Connection is very fast."}
_SIM_TEXT = {"active": "Your SIM card is active and working.", "missing": "No SIM card detected in the phone.",
             "locked_pin": "The SIM card is locked with a PIN code.",
             "locked_puk": "The SIM card is locked with a PUK code."}


class TelecomUserTools(TelecomPhone):
    """The telecom user's tools over ``db`` (see :class:`TelecomPhone`)."""

    def _arguments(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return _conform(TELECOM_USER_TOOLS[name]["function"]["parameters"], arguments, "")

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
