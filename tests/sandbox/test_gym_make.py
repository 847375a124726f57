"""Done when: ``gym.make("spade/<stored env>")`` runs the environment in the sandbox by default."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from envsrc import COUNTER
from spade_core.metadata import EnvMetadata, EnvStatus
from spade_core.store import EnvStore

GYM_MAKE = textwrap.dedent(
    """
    import json, os
    import gymnasium as gym
    import spade_core
    from spade_sandbox import default_pool

    gym.register_envs(spade_core)
    env = gym.make("spade/SandboxCounter-v1")
    obs, info = env.reset(seed=4)
    steps = [env.step(a) for a in env.unwrapped.solution()]
    worker = default_pool().worker_of(env.unwrapped.handle)
    out = {
        "kind": type(env.unwrapped).__name__,
        "obs": obs,
        "last": [steps[-1][1], steps[-1][2]],
        "worker_pid": worker.pid,
        "my_pid": os.getpid(),
        "layers": list(worker.layers),
    }
    env.close()
    print(json.dumps(out))
    """
)


def test_gym_make_of_a_stored_env_runs_in_a_hardened_worker(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    with EnvStore(f"sqlite:///{home / 'store.db'}") as store:
        store.add(COUNTER, EnvMetadata(name="SandboxCounter", domain="games", skill="counting", max_turns=5))
        store.set_status("SandboxCounter-v1", EnvStatus.admitted)
    env_vars = {**os.environ, "SPADE_HOME": str(home)}
    env_vars.pop("SPADE_PLUGINS", None)
    proc = subprocess.run(
        [sys.executable, "-c", GYM_MAKE], capture_output=True, text=True, env=env_vars, cwd=home, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["kind"] == "SandboxedEnv"
    assert out["obs"].startswith("secret ")
    assert out["last"] == [1.0, True]
    assert out["worker_pid"] != out["my_pid"]
    assert {"seccomp", "landlock", "namespaces", "rlimits"} <= set(out["layers"])
