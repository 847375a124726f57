"""The telecom user's phone and surroundings (the benchmark's telecom user database): the
phone's state as the benchmark derives it after each change (network search, mobile data,
speed, MMS, status bar), and the environment functions the task files script it with
(breaking the phone in an initial state, asserting on it at the end). The user's tools over
it are :mod:`.telecom_user`'s."""

from __future__ import annotations

from typing import Any

from ._common import Tau2DataError

_SIGNAL_BARS = {"none": "📵 No Signal", "poor": "📶¹ Poor", "fair": "📶² Fair", "good": "📶³ Good",
                "excellent": "📶⁴ Excellent"}
_SPEED_RANGE = {"2G": (0.1, 0.4), "3G": (1.0, 5.0), "4G": (10.0, 100.0), "5G": (50.0, 500.0), "none": (0.0, 0.0)}
_SIGNAL_FACTOR = {"poor": 0.2, "fair": 0.5, "good": 0.8, "excellent": 1.0, "none": 0.0}
NETWORK_MODES = ("4g_5g_preferred", "4g_only", "3g_only", "2g_only")
_MODE_TECH = {"4g_only": "4G", "3g_only": "3G", "2g_only": "2G"}
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


class TelecomPhone:
    """The phone (``device``: its settings and state) and ``surroundings`` (where the user is,
    what the network allows them, a pending payment request) of ``db``, changed as the
    benchmark changes them: re-running its network search where the benchmark does.

    :data:`ENV_FUNCTIONS` are not the user's tools: the task files' initial states break the
    phone with them, and their assertions check it (``assert_*``)."""

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
