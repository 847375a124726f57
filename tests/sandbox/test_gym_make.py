"""Done when: ``gym.make("spade/<stored env>")`` runs the environment in the sandbox by default."""

from __future__ import annotations

import textwrap
from pathlib import Path

from conftest import home_with_stored_counter, run_fresh

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
    out = run_fresh(home_with_stored_counter(tmp_path, "SandboxCounter"), GYM_MAKE)
    assert out["kind"] == "SandboxedEnv"
    assert out["obs"].startswith("secret ")
    assert out["last"] == [1.0, True]
    assert out["worker_pid"] != out["my_pid"]
    assert {"seccomp", "landlock", "namespaces", "rlimits"} <= set(out["layers"])
