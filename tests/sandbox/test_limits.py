"""SandboxLimits: checked at construction, plain data in and out; the process-wide pool
reads [spade.sandbox] without the pydantic configuration model when there is none."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from spade_sandbox.limits import InvalidSandboxLimits

from spade_sandbox import SandboxLimits

valid = st.builds(
    SandboxLimits,
    call_timeout_s=st.floats(0.001, 3600),
    memory_mb=st.integers(32, 1_048_576),
    cpu_seconds=st.integers(1, 10_000),
    max_output_chars=st.integers(16, 1 << 30),
    max_idle_workers=st.integers(0, 1000),
    seccomp=st.booleans(),
)


@given(limits=valid)
def test_limits_survive_plain_data(limits: SandboxLimits):
    assert SandboxLimits.model_validate(limits.model_dump()) == limits
    assert limits.layer_options()["memory_mb"] == limits.memory_mb


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"call_timeout_s": 0}, "call_timeout_s: must be greater than 0"),
        ({"call_timeout_s": float("nan")}, "call_timeout_s: expected a finite number"),
        ({"memory_mb": 31}, "memory_mb: must be at least 32"),
        ({"memory_mb": 2.5}, "memory_mb: expected an integer"),
        ({"cpu_seconds": True}, "cpu_seconds: expected an integer"),
        ({"seccomp": 1}, "seccomp: expected true or false"),
        ({"max_frame_bytes": 1 << 30}, "max_frame_bytes: must be at most"),
    ],
)
def test_a_bad_limit_is_named_in_the_error(fields: dict, needle: str):
    with pytest.raises(InvalidSandboxLimits, match=needle):
        SandboxLimits(**fields)


def test_every_problem_is_listed_and_unknown_fields_are_refused():
    with pytest.raises(InvalidSandboxLimits) as info:
        SandboxLimits(memory_mb=1, cpu_seconds=0)
    assert "memory_mb" in str(info.value) and "cpu_seconds" in str(info.value)
    with pytest.raises(InvalidSandboxLimits, match="unknown field"):
        SandboxLimits.model_validate({"memory": 64})
    with pytest.raises(TypeError):
        SandboxLimits(10.0)  # keyword-only, as the pydantic model was
    assert SandboxLimits(call_timeout_s=3).call_timeout_s == 3.0  # ints are fine for floats


# What the edge (SandboxedEnv without a pool, the gymnasium.make entry) does for the
# process-wide pool: the active configuration's [spade.sandbox], read there and passed down.
_PROBE = (
    "import sys\nfrom spade_sandbox.default import active_sandbox_settings, default_pool\n"
    "pool = default_pool(active_sandbox_settings())\n"
    "print(pool.limits.call_timeout_s, pool.limits.memory_mb, 'pydantic' in sys.modules)\npool.close()"
)
_EDGE = (
    "from spade_sandbox import SandboxedEnv\n"
    "env = SandboxedEnv('class TinyEnv:\\n    def reset(self, seed=None):\\n        return \"o\", {}\\n"
    "    def step(self, action):\\n        return \"o\", 1.0, True, False, {}\\n')\n"
    "print(env.pool.limits.call_timeout_s, env.pool.limits.memory_mb, env.reset(seed=1)[0])\nenv.pool.close()"
)
# The library alone: default_pool() with no settings reads no file.
_LIBRARY = (
    "from spade_sandbox import default_pool\npool = default_pool()\n"
    "print(pool.limits.call_timeout_s, pool.limits.memory_mb)\npool.close()"
)


def _probe(home: Path, code: str = _PROBE) -> list[str]:
    env = {**os.environ, "SPADE_HOME": str(home)}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=home, capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_the_process_wide_pool_reads_its_settings_without_pydantic_when_there_are_none(tmp_path: Path):
    assert _probe(tmp_path) == ["10.0", "512", "False"]
    (tmp_path / "spade.toml").write_text('[spade]\nstore_envs_run = "sandbox"\n')
    assert _probe(tmp_path) == ["10.0", "512", "False"]


def test_the_process_wide_pool_honours_a_sandbox_table(tmp_path: Path):
    (tmp_path / "spade.toml").write_text("[spade.sandbox]\ncall_timeout_s = 3\nmemory_mb = 256\n")
    assert _probe(tmp_path) == ["3.0", "256", "False"], "the light reader reads the table too"
    (tmp_path / "spade.toml").write_text("[spade.sandbox]\nmemory_mb = 1\n")
    env = {**os.environ, "SPADE_HOME": str(tmp_path)}
    bad = subprocess.run([sys.executable, "-c", _PROBE], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode != 0 and "memory_mb" in bad.stderr


def test_the_settings_reach_the_process_wide_pool_from_the_edge_only(tmp_path: Path):
    (tmp_path / "spade.toml").write_text("[spade.sandbox]\ncall_timeout_s = 3\nmemory_mb = 256\n")
    assert _probe(tmp_path, _EDGE) == ["3.0", "256", "o"]
    assert _probe(tmp_path, _LIBRARY) == ["10.0", "512"]
