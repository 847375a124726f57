"""SandboxedEnv is a real Gymnasium environment whose code runs in a worker."""

from __future__ import annotations

import gc

import gymnasium as gym
import pytest
from envsrc import COUNTER, step_returns
from spade_core.env import TextEnv
from spade_core.errors import EnvContractError
from spade_sandbox.errors import EnvCodeError, SandboxError

from spade_sandbox import SandboxedEnv, SandboxPool

TOOL_ENV = '''
class ToolDemoEnv:
    def get_tool_schemas(self):
        return [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]
    def reset(self, seed=None):
        return "ask", {}
    def step(self, action):
        return "ok", 1.0, True, False, {}
'''


def test_is_a_gymnasium_text_env_driven_through_the_adapter(pool: SandboxPool):
    env = SandboxedEnv(COUNTER, pool=pool, max_turns=3)
    assert isinstance(env, gym.Env) and isinstance(env, TextEnv)
    obs, info = env.reset(seed=5)
    assert obs.startswith("secret ") and info == {"seed": 5}
    assert env.step("a")[2:4] == (False, False)
    assert env.step("b")[2:4] == (False, False)
    assert env.step("c")[2:4] == (False, True)  # truncated at max_turns by the adapter
    assert env.solution() == ["win"]
    assert env.action_space.contains("any text")
    env.close()
    env.close()


def test_a_step_after_the_end_is_refused_before_it_reaches_the_worker(pool: SandboxPool):
    from spade_core.env import EpisodeEnded

    env = SandboxedEnv(COUNTER, pool=pool, max_turns=10)
    env.reset(seed=5)
    assert env.step("win")[1:3] == (1.0, True)
    with pytest.raises(EpisodeEnded):
        env.step("win")
    with pytest.raises(gym.error.ResetNeeded):
        env.step("anything")
    env.reset(seed=5)
    assert env.step("a")[2:4] == (False, False)
    env.close()


def test_reward_range_is_enforced_by_the_adapter(pool: SandboxPool):
    env = SandboxedEnv(step_returns("('x', 5.0, False, False, {})"), pool=pool)
    env.reset()
    with pytest.raises(EnvContractError, match="outside the declared range"):
        env.step("a")
    env.close()


def test_errors_surface_as_sandbox_errors(pool: SandboxPool):
    env = SandboxedEnv(step_returns("1 / 0"), pool=pool)
    env.reset()
    with pytest.raises(EnvCodeError) as info:
        env.step("a")
    assert isinstance(info.value, SandboxError) and "ZeroDivisionError" in info.value.env_traceback
    env.close()


def test_tool_schemas_are_forwarded(pool: SandboxPool):
    env = SandboxedEnv(TOOL_ENV, pool=pool)
    assert env.tools[0]["function"]["name"] == "add"
    env.close()


def test_garbage_collected_env_frees_its_instance(pool: SandboxPool):
    env = SandboxedEnv(COUNTER + "\n# gc probe\n", pool=pool)
    worker = pool.worker_of(env.handle)
    assert worker.instances == 1
    del env
    gc.collect()
    SandboxedEnv(COUNTER + "\n# gc probe\n", pool=pool)  # the next spawn drains pending closes
    assert [w.instances for w in pool.workers() if w.worker_id == worker.worker_id] == [1]


def test_passes_gymnasium_env_checker(pool: SandboxPool):
    from gymnasium.utils.env_checker import check_env

    env = SandboxedEnv(COUNTER, pool=pool)
    check_env(env, skip_render_check=True)
    env.close()
