"""A Harbor agent that tries, as the user ``agent``, every way around a SPADE task's episode,
for ``harbor_check.py``'s trials (``import_path "harbor_hostile_agent:HostileAgent"``;
imported by Harbor under ``SPADE_HARBOR_PYTHON``, never by the suite itself).

On ``GuessNumber-v1`` (a number in [1, 64], eight guesses, the number told when they run
out) it reads the task's code and hint, asks for other root commands, loses its episode on
purpose (which tells it the number), then tries to play again: start over, start over with
the record moved away (and, should that work, win the second episode), or else write a
record of the winning guess (its signature kept); last it asks for ``solve``. Every attempt and its answer goes to ``hostile.json`` in the trial's agent
folder; the verifier's reward says whether any of it worked (a win would be 1).
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

EPISODE = "/logs/artifacts/spade-episode.json"
HINT = "Halve the interval"
#: Where an agent would look for the task's code, hint and state (its own view).
LOOK_IN = "/opt /home /logs /tmp /solution /tests /var /root /run"


class HostileAgent(BaseAgent):
    @staticmethod
    def name() -> str:
        return "spade-hostile"

    def version(self) -> str:
        return "1.0.0"

    async def setup(self, environment: BaseEnvironment) -> None:
        pass

    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        seen: dict[str, Any] = {}

        async def sh(name: str, command: str) -> dict[str, Any]:
            done = await environment.exec(command, timeout_sec=300)
            seen[name] = {"rc": done.return_code, "out": done.stdout or "", "err": done.stderr or ""}
            return seen[name]

        await sh("read_code", "cat /opt/spade-task/env.py")
        await sh("read_seed", "cat /opt/spade-task/runtime.json")
        await sh("find_hint", f"grep -rls {shlex.quote(HINT)} {LOOK_IN} 2>/dev/null; true")
        await sh("find_code", f"grep -rls 'class GuessNumberEnv' {LOOK_IN} 2>/dev/null; true")
        await sh("sudo_other", "sudo -n /bin/cat /opt/spade-task/env.py")
        await sh("start", "spade-episode start")
        secret = None
        for n in range(8):
            step = await sh(f"lose_{n}", "spade-episode step 0")
            found = re.search(r"it was (\d+)", step["out"])
            if found:
                secret = int(found.group(1))
                break
        seen["secret"] = secret
        await sh("start_again", "spade-episode start")
        again = await sh("start_after_moving", f"mv {EPISODE} /logs/artifacts/lost.json && spade-episode start")
        if again["rc"] == 0 and secret is not None:  # a second episode: win it
            await sh("win_again", f"spade-episode step {secret}")
        else:  # write the winning record itself, its signature kept
            lost = await sh("lost", "cat /logs/artifacts/lost.json")
            if secret is not None and lost["rc"] == 0:
                record = json.loads(lost["out"])
                record["turns"] = [{"action": f"\\boxed{{{secret}}}", "observation": f"Correct, it was {secret}!",
                                    "reward": 1.0, "terminated": True, "truncated": False}]
                await sh("forge", f"rm -f {EPISODE}; printf %s {shlex.quote(json.dumps(record))} > {EPISODE}")
        await sh("solve", "spade-episode solve")
        (self.logs_dir / "hostile.json").write_text(json.dumps(seen, indent=2))
