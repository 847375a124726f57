"""A self-play run has one sandbox setting: ``[spade.sandbox]`` with ``[selfplay.sandbox]``
applied. Its rollouts run under it (an environment that allocates past ``memory_mb`` at
reset ends its episode with the sandbox's memory error), and the configuration its designer
and periodic evaluation read carries the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from spade_core.config import load_config
from spade_core.sandbox_settings import SandboxSettings
from spade_trainer.config import load_selfplay_config
from spade_trainer.errors import ConfigError
from spade_trainer.rollout import EpisodeSpec, PlayableEnv, RolloutEngine
from spade_trainer.selfplay import SelfPlayRun

from .test_rollout import ScriptedPolicy


def _rollout_error(run: SelfPlayRun, source: str, tokenizer: Any) -> str | None:
    pool = run._default_backend()  # what SelfPlayRun.setup() builds
    try:
        hog = PlayableEnv("hog", source, "games", class_name="MemoryHogEnv", max_turns=2)
        engine = RolloutEngine(pool, ScriptedPolicy(tokenizer, lambda _: "\\boxed{1}"), tokenizer)
        (episode,) = engine.run([EpisodeSpec(hog, hinted=False, seed=1)])
        return episode.error
    finally:
        pool.close()


def test_rollouts_run_under_spade_sandbox(tmp_path: Path, memory_hog_source: str, tight_sandbox_table: str, tiny_tokenizer: Any) -> None:
    config = load_selfplay_config(overrides=["rollout.executor=local", f"run_dir={tmp_path / 'run'}"])
    roomy = tmp_path / "roomy.toml"
    roomy.write_text("[spade.sandbox]\n")
    assert _rollout_error(SelfPlayRun(config, spade_config=load_config(roomy)), memory_hog_source, tiny_tokenizer) is None
    tight = tmp_path / "tight.toml"
    tight.write_text(tight_sandbox_table)
    run = SelfPlayRun(config, spade_config=load_config(tight))
    error = _rollout_error(run, memory_hog_source, tiny_tokenizer)
    assert error is not None and "memory" in error, error
    assert run.spade_config.sandbox == SandboxSettings(memory_mb=128), "what the designer and the periodic evaluation read"


def test_rollouts_run_under_the_active_files_spade_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memory_hog_source: str, tight_sandbox_table: str,
    tiny_tokenizer: Any,
) -> None:
    """No configuration handed in (``spade selfplay`` without ``--config``): the active
    ``spade.toml`` of ``SPADE_HOME`` sets the rollouts' limits."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "spade.toml").write_text(tight_sandbox_table)
    monkeypatch.setenv("SPADE_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    config = load_selfplay_config(overrides=["rollout.executor=local", f"run_dir={tmp_path / 'run'}"])
    run = SelfPlayRun(config)
    assert run.spade_config.sandbox == SandboxSettings(memory_mb=128)
    error = _rollout_error(run, memory_hog_source, tiny_tokenizer)
    assert error is not None and "memory" in error, error


def test_selfplay_sandbox_overrides_spade_sandbox_for_the_whole_run(
    tmp_path: Path, memory_hog_source: str, tight_sandbox_table: str, tiny_tokenizer: Any
) -> None:
    tight = tmp_path / "tight.toml"
    tight.write_text(tight_sandbox_table)
    config = load_selfplay_config(overrides=["rollout.executor=local", "sandbox.memory_mb=512", f"run_dir={tmp_path / 'run'}"])
    run = SelfPlayRun(config, spade_config=load_config(tight))
    assert run.spade_config.sandbox == SandboxSettings(memory_mb=512)
    assert _rollout_error(run, memory_hog_source, tiny_tokenizer) is None
    with pytest.raises(ConfigError, match="memory_mb"):
        load_selfplay_config(overrides=["sandbox.memory_mb=8"])
