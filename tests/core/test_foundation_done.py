"""The "Done when" of the Foundation issue, end to end with real parts only:

import the reference-format fixture folder into a fresh SPADE_HOME store as admitted,
list it, play one environment through the CLI to full reward by typing its solution, and
``gymnasium.make`` it from a fresh interpreter.

Store environments run in the sandbox here (the default, ``store_envs_run = "sandbox"``):
``spade_sandbox`` is ready. Were it not, the subprocess would need a ``spade.toml`` with
``store_envs_run = "in-process"`` — flip back to the sandbox as soon as it exists.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from .cli_support import spade
from .conftest import REFERENCE_ENVS, reference_class

IDS = ["GuessNumber-v1", "LightSwitches-v1", "SwapSort-v1", "TowerOfHanoi-v1"]

GYM_MAKE = textwrap.dedent(
    """
    import json, sys
    import gymnasium as gym
    import spade_core

    gym.register_envs(spade_core)
    env = gym.make("spade/TowerOfHanoi-v1")
    obs, info = env.reset(seed=11)
    rewards, terminated = [], False
    for action in env.unwrapped.solution():
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
    kind = type(env.unwrapped).__name__
    env.close()
    print(json.dumps({"rewards": rewards, "terminated": terminated, "kind": kind}))
    """
)


def test_import_list_play_and_gym_make_from_a_fresh_interpreter(spade_home: Path) -> None:
    # 1. import the fixture folder as admitted
    imported = spade("import", str(REFERENCE_ENVS), "--domain", "games", "--status", "admitted", "--json")
    assert imported.exit_code == 0, imported.output
    assert sorted(r["env_id"] for r in json.loads(imported.stdout)) == IDS

    # 2. list them
    listed = json.loads(spade("list", "--json", "--status", "admitted", "--domain", "games").stdout)
    store_rows = {r["id"]: r for r in listed if r["kind"] == "store"}
    assert sorted(store_rows) == IDS
    assert all(r["status"] == "admitted" for r in store_rows.values())

    # 3. play one to full reward by typing its solution (sandboxed: the default for store code)
    env = reference_class("tower_of_hanoi")()
    env.reset(seed=11)
    played = spade("play", "TowerOfHanoi-v1", "--seed", "11", input="\n".join(env.solution()) + "\n:quit\n")
    assert played.exit_code == 0, played.output
    assert "running store code in this process" not in played.stdout
    assert "Solved!" in played.stdout
    assert "episode over after 7 turns: final reward 1.000" in played.stdout

    # 4. gym.make it from a fresh interpreter that only knows SPADE_HOME
    env_vars = {**os.environ, "SPADE_HOME": str(spade_home)}
    env_vars.pop("SPADE_PLUGINS", None)
    proc = subprocess.run(
        [sys.executable, "-c", GYM_MAKE], capture_output=True, text=True, env=env_vars, cwd=spade_home, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["terminated"] is True
    assert result["rewards"][-1] == 1.0
    assert len(result["rewards"]) == 7
    assert result["kind"] == "SandboxedEnv", "store code runs behind the sandbox"
