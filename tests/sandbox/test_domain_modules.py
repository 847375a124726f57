"""Domain helper modules: allow-listed per spawn, pre-imported by the zygote on demand."""

from __future__ import annotations

from pathlib import Path

import pytest
from spade_sandbox.errors import SandboxUnavailable, StaticCheckError

from spade_sandbox import SandboxPool

COLOR_ENV = '''
import colorsys

class ColorEnv:
    def reset(self, seed=None):
        return "rgb", {}
    def step(self, action):
        h, s, v = colorsys.rgb_to_hsv(1.0, 0.0, 0.0)
        return f"{h:.1f} {s:.1f} {v:.1f}", 1.0, True, False, {}
'''


def test_extra_module_is_refused_unless_allowed(pool: SandboxPool):
    with pytest.raises(StaticCheckError, match="'colorsys'"):
        pool.spawn(COLOR_ENV)
    h = pool.spawn(COLOR_ENV, allowed_modules=["colorsys"])
    assert pool.step(h, "go")[0] == "0.0 1.0 1.0"


def test_allowed_module_set_is_part_of_the_code_version(pool: SandboxPool):
    a = pool.spawn(COLOR_ENV, allowed_modules=["colorsys"])
    b = pool.spawn(COLOR_ENV, allowed_modules=["colorsys", "zlib"])
    assert a.worker_id != b.worker_id


def test_wrapped_module_hides_private_and_module_attributes():
    """Modules reach env code as wrappers: no ``sys`` hiding behind a public module."""
    probe = '''
import dataclasses, json, typing, random
class WrapEnv:
    def reset(self, seed=None):
        return "r", {}
    def step(self, action):
        found = [m for m, a in ((dataclasses, "sys"), (json, "codecs"), (typing, "sys"), (random, "_os")) if hasattr(m, a)]
        return ",".join(found) or "none", 0.0, False, False, {}
'''
    with SandboxPool() as p:  # guarded: the runtime wrappers are on
        assert p.step(p.spawn(probe.replace("hasattr(m, a)", "a in dir(m)")), "x")[0] == "none"


def test_unimportable_allowed_module_is_a_clear_error(pool: SandboxPool):
    with pytest.raises(SandboxUnavailable, match="no_such_helper_module"):
        pool.spawn(COLOR_ENV.replace("colorsys", "no_such_helper_module"), allowed_modules=["no_such_helper_module"])


def test_tool_use_domain_environment_runs_in_the_sandbox(pool: SandboxPool):
    tooluse = pytest.importorskip("spade_tooluse")
    envs = sorted((Path(tooluse.__file__).parent / "envs").glob("*.py"))
    envs = [e for e in envs if e.name != "__init__.py"]
    if not envs:
        pytest.skip("no tool-use seed environments installed")
    h = pool.spawn(envs[0].read_text(), allowed_modules=["spade_tooluse.base"])
    obs, _ = pool.reset(h, seed=1)
    assert obs
    schemas = pool.call(h, "get_tool_schemas")
    assert schemas and all(s["type"] == "function" for s in schemas)
    name = schemas[0]["function"]["name"]
    obs, reward, *_ = pool.step(h, f'<tool_call>{{"name": "{name}", "arguments": {{}}}}</tool_call>')
    assert "<tool_response>" in obs
