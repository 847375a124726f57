"""A deployment service whose deploys fail until a missing setting is copied over and a
lock is released."""

from spade_tooluse.base import ToolEnv, ToolError, Turn, call, function_schema

SERVICES = ["billing", "search", "gateway", "profile", "notifier", "reports"]
KEYS = ["db_url", "cache_url", "queue_url", "api_token"]


class DeployPipelineEnv(ToolEnv):
    description = "You operate the deployment service. Read errors carefully: they say what to fix."
    advance_on = "reply"
    EXTRA_SETTINGS = 0
    # what an edit may change (spade_designer.knobs): other settings the service to copy from
    # holds besides the one the deploy needs (drawn after everything else)
    KNOBS = {"EXTRA_SETTINGS": (int, 0, 3)}
    HARDER = {"EXTRA_SETTINGS": "higher"}
    tools = [
        function_schema("get_service", "A service's running version, settings and lock state.", {"service": {"type": "string"}}, ["service"]),
        function_schema("deploy", "Deploy a version of a service.", {"service": {"type": "string"}, "version": {"type": "string"}},
                        ["service", "version"]),
        function_schema("set_config", "Set one setting of a service.",
                        {"service": {"type": "string"}, "key": {"type": "string"}, "value": {"type": "string"}},
                        ["service", "key", "value"]),
        function_schema("unlock", "Release a service's deploy lock.", {"service": {"type": "string"}}, ["service"]),
    ]

    def build(self):
        rng = self.rng
        a, b, c = rng.sample(SERVICES, 3)
        key = rng.choice(KEYS)
        value = key.split("_")[0] + "://" + rng.choice(["10.0.0.", "10.1.2."]) + str(rng.randint(2, 250))
        services = {}
        for name in (a, b, c):
            services[name] = {"version": "1." + str(rng.randint(0, 9)) + ".0", "config": {}, "locked": False}
        services[b]["config"][key] = value
        services[c]["locked"] = True
        new_a = "2." + str(rng.randint(0, 5)) + ".0"
        new_c = "3." + str(rng.randint(0, 5)) + ".1"
        for other in rng.sample([k for k in KEYS if k != key], self.EXTRA_SETTINGS):
            services[b]["config"][other] = other.split("_")[0] + "://10.2.0." + str(rng.randint(2, 250))
        self.state = {"services": services, "needs": {new_a: key}, "history": []}
        return [
            Turn(
                user="Deploy version " + new_a + " of " + a + ". If it needs a setting, copy it from " + b + ".",
                calls=[call("get_service", service=b), call("set_config", service=a, key=key, value=value),
                       call("deploy", service=a, version=new_a)],
            ),
            Turn(
                user="Now deploy " + new_c + " of " + c + ".",
                calls=[call("unlock", service=c), call("deploy", service=c, version=new_c)],
            ),
            Turn(
                user="Which version is " + a + " running now?",
                calls=[call("get_service", service=a)],
                outputs=[new_a],
            ),
        ]

    def _service(self, service):
        s = self.state["services"].get(service)
        if s is None:
            raise ToolError("unknown service " + service + "; services: " + ", ".join(sorted(self.state["services"])))
        return s

    def tool_get_service(self, service):
        return dict(self._service(service), service=service)

    def tool_deploy(self, service, version):
        s = self._service(service)
        if s["locked"]:
            raise ToolError("deploy refused: " + service + " is locked (use unlock first)")
        need = self.state["needs"].get(version)
        if need is not None and need not in s["config"]:
            raise ToolError("deploy failed: version " + version + " requires the setting '" + need + "'")
        self.state["history"].append([service, s["version"], version])
        s["version"] = version
        return {"service": service, "version": version, "status": "running"}

    def tool_set_config(self, service, key, value):
        self._service(service)["config"][key] = value
        return {"service": service, "key": key}

    def tool_unlock(self, service):
        s = self._service(service)
        if not s["locked"]:
            raise ToolError(service + " is not locked")
        s["locked"] = False
        return {"service": service, "locked": False}
