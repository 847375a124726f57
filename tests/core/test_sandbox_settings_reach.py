"""``[spade.sandbox]`` reaches the workers of ``gymnasium.make`` and ``spade play``, from the
active configuration file and from ``spade --config FILE``: an environment that allocates
past the configured ``memory_mb`` is stopped with the sandbox's memory error."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest
from spade_core.config import load_config
from spade_core.metadata import EnvMetadata, EnvStatus
from spade_core.sandbox_settings import InvalidSandboxSettings, SandboxSettings
from spade_core.stored_envs import make_stored_env

from .cli_support import open_store, spade

pytest.importorskip("spade_sandbox")
from spade_sandbox.errors import SandboxMemoryError
from spade_sandbox.launcher import SandboxLauncher
from spade_sandbox.limits import SandboxLimits


def _store_hog(source: str) -> str:
    with open_store() as store:
        store.add(source, EnvMetadata(name="MemoryHog", domain="games", skill="eating", max_turns=3))
        store.set_status("MemoryHog-v1", EnvStatus.admitted)
    return "MemoryHog-v1"


def test_every_default_has_one_home() -> None:
    settings, limits = SandboxSettings(), SandboxLimits()
    assert (limits.memory_mb, limits.cpu_seconds, limits.worker_cpu_seconds, limits.call_timeout_s) == (
        settings.memory_mb, settings.cpu_seconds, settings.worker_cpu_seconds, settings.call_timeout_s
    )
    with pytest.raises(InvalidSandboxSettings, match="memory_mb: must be at least 32"):
        SandboxSettings(memory_mb=8)
    launcher = SandboxLauncher(SandboxSettings(memory_mb=128, cpu_seconds=7))
    assert launcher.limits(call_timeout_s=2).memory_mb == 128
    assert launcher.limits(call_timeout_s=2).call_timeout_s == 2.0


def test_the_active_file_reaches_make_stored_env(spade_home: Path, memory_hog_source: str, tight_sandbox_table: str) -> None:
    env_id = _store_hog(memory_hog_source)
    env = make_stored_env(env_id)
    assert env.reset(seed=1)[0] == "fed", "the default memory_mb lets it eat"
    env.close()
    (spade_home / "spade.toml").write_text(tight_sandbox_table)
    env = make_stored_env(env_id)
    with pytest.raises(SandboxMemoryError) as info:
        env.reset(seed=1)
    assert info.value.kind == "memory"
    env.close()


def test_gym_make_runs_under_the_active_file(spade_home: Path, memory_hog_source: str, tight_sandbox_table: str) -> None:
    env_id = _store_hog(memory_hog_source)
    (spade_home / "spade.toml").write_text(tight_sandbox_table)
    gym.register(id=f"spade/{env_id}-reach", entry_point="spade_core.stored_envs:make_stored_env", kwargs={"env_id": env_id})
    try:
        env = gym.make(f"spade/{env_id}-reach")
        with pytest.raises(SandboxMemoryError):
            env.reset(seed=1)
        env.close()
    finally:
        gym.registry.pop(f"spade/{env_id}-reach", None)


def test_a_loaded_configuration_wins_over_the_active_file(
    spade_home: Path, tmp_path: Path, memory_hog_source: str, tight_sandbox_table: str
) -> None:
    env_id = _store_hog(memory_hog_source)
    tight = tmp_path / "tight.toml"
    tight.write_text(f'[spade]\nhome = "{spade_home}"\n' + tight_sandbox_table)
    env = make_stored_env(env_id, config=load_config(tight))
    with pytest.raises(SandboxMemoryError):
        env.reset(seed=1)
    env.close()


@pytest.mark.parametrize("where", ["--config", "active file"])
def test_spade_play_runs_under_the_configured_memory(
    where: str, spade_home: Path, tmp_path: Path, memory_hog_source: str, tight_sandbox_table: str
) -> None:
    env_id = _store_hog(memory_hog_source)
    fed = spade("play", env_id, "--seed", "1", input=":quit\n")
    assert "fed" in fed.stdout, fed.output
    if where == "--config":
        tight = tmp_path / "tight.toml"
        tight.write_text(f'[spade]\nhome = "{spade_home}"\n' + tight_sandbox_table)
        run = spade("--config", str(tight), "play", env_id, "--seed", "1", input=":quit\n")
    else:
        (spade_home / "spade.toml").write_text(tight_sandbox_table)
        run = spade("play", env_id, "--seed", "1", input=":quit\n")
    assert run.exit_code != 0 and "memory" in run.output, run.output
    assert "fed" not in run.stdout
