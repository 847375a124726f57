"""A smart home hub with many device tools: lights, heating, locks (and some distractors)."""

from spade_tooluse.base import ToolEnv, ToolError, Turn, call, function_schema

ROOMS = ["kitchen", "living room", "bedroom", "office", "hallway"]
DOORS = ["front", "back", "garage"]


class SmartHomeEnv(ToolEnv):
    description = "You control a smart home hub."
    advance_on = "reply"
    LIGHTS = 4
    # what an edit may change (spade_designer.knobs): rooms with a light
    KNOBS = {"LIGHTS": (int, 2, 5)}
    HARDER = {"LIGHTS": "higher"}
    tools = [
        function_schema("get_status", "State of every device."),
        function_schema("set_light", "Switch a room's light; brightness 1-100 when on.",
                        {"room": {"type": "string"}, "on": {"type": "boolean"}, "brightness": {"type": "integer"}}, ["room", "on"]),
        function_schema("set_thermostat", "Target temperature in Celsius and mode.",
                        {"celsius": {"type": "number"}, "mode": {"type": "string", "enum": ["heat", "cool", "off"]}}, ["celsius", "mode"]),
        function_schema("lock_door", "Lock a door.", {"door": {"type": "string"}}, ["door"]),
        function_schema("unlock_door", "Unlock a door.", {"door": {"type": "string"}}, ["door"]),
        function_schema("play_music", "Play a playlist on the speakers.", {"playlist": {"type": "string"}}, ["playlist"]),
        function_schema("set_alarm", "Set the wake-up alarm (HH:MM).", {"time": {"type": "string"}}, ["time"]),
    ]

    def build(self):
        rng = self.rng
        rooms = rng.sample(ROOMS, self.LIGHTS)
        lights = {r: {"on": rng.random() < 0.5, "brightness": 50} for r in rooms}
        doors = {d: rng.random() < 0.5 for d in DOORS}
        self.state = {"lights": lights, "thermostat": {"celsius": 19.0, "mode": "off"}, "locked": doors,
                      "music": None, "alarm": None}
        room = rng.choice(rooms)
        level = rng.choice([30, 40, 60, 75])
        temp = rng.choice([20.5, 21.0, 22.0])
        lit = sorted(r for r in rooms if lights[r]["on"] or r == room)
        unlocked = sorted(d for d in DOORS if not doors[d])
        return [
            Turn(user="Turn on the " + room + " light at " + str(level) + "% brightness.",
                 calls=[call("set_light", room=room, on=True, brightness=level)]),
            Turn(user="Heat the house to " + str(temp) + " degrees.",
                 calls=[call("set_thermostat", celsius=temp, mode="heat")]),
            Turn(user="I'm leaving: switch off every light that is on and lock every unlocked door.",
                 calls=[call("get_status")] + [call("set_light", room=r, on=False) for r in lit]
                 + [call("lock_door", door=d) for d in unlocked]),
        ]

    def tool_get_status(self):
        return self.state

    def tool_set_light(self, room, on, brightness=None):
        light = self.state["lights"].get(room)
        if light is None:
            raise ToolError("no light in " + room + "; rooms: " + ", ".join(sorted(self.state["lights"])))
        if brightness is not None:
            if not on:
                raise ToolError("brightness only applies when switching on")
            if not 1 <= brightness <= 100:
                raise ToolError("brightness must be 1-100")
            light["brightness"] = brightness
        light["on"] = on
        return {"room": room, "on": on, "brightness": light["brightness"]}

    def tool_set_thermostat(self, celsius, mode):
        if not 10 <= celsius <= 30:
            raise ToolError("temperature must be 10-30")
        self.state["thermostat"] = {"celsius": float(celsius), "mode": mode}
        return self.state["thermostat"]

    def tool_lock_door(self, door):
        if door not in self.state["locked"]:
            raise ToolError("no door " + door)
        self.state["locked"][door] = True
        return {"door": door, "locked": True}

    def tool_unlock_door(self, door):
        if door not in self.state["locked"]:
            raise ToolError("no door " + door)
        self.state["locked"][door] = False
        return {"door": door, "locked": False}

    def tool_play_music(self, playlist):
        self.state["music"] = playlist
        return "playing " + playlist

    def tool_set_alarm(self, time):
        self.state["alarm"] = time
        return "alarm set for " + time
