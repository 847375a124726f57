"""The self-play loop end to end on CPU: tiny model, real sandbox, real store, real TRL steps.

The design stage here is a scripted test double (a tiny random model cannot write working
environments); the integration test with the real designer is in test_integration.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
import torch
from spade_core.metadata import EnvStatus
from spade_trainer.config import load_selfplay_config
from spade_trainer.errors import CheckpointError
from spade_trainer.selfplay import SelfPlayRun, latest_checkpoint
from spade_trainer.shaping_signals import design_progress

from .scripted import ScriptedDesignStage

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def _config(tmp_path: Path, iterations: int = 2, **extra: Any) -> Any:
    sets = [f'run_dir="{tmp_path / "run"}"', f"iterations={iterations}", "envs_per_iteration=2"]
    sets += [f"{k}={v}" for k, v in extra.items()]
    return load_selfplay_config(preset="tiny", overrides=sets)


def _run(cfg: Any, resume: bool = False) -> SelfPlayRun:
    run = SelfPlayRun(cfg, design_stage_factory=ScriptedDesignStage)
    run.run(resume=resume)
    return run


def test_two_iterations_exercise_every_stage(tmp_path: Path) -> None:
    run = _run(_config(tmp_path))
    lines = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in lines] == [1, 2]
    first = lines[0]
    assert first["designed"] == 2 and first["admitted"] == 1 and first["admission_rate"] == 0.5
    assert first["admission_by_stage"] == {"load": 0.5, "static": 1.0}
    assert first["envs_played"] == 2 and first["episodes"] == 2 * 2 * 2
    assert first["regret_mean"] is not None and 0.0 <= first["win_rate"] <= 1.0
    assert first["train"]["loss"] is not None and first["samples"]["designer_samples"] == 2
    assert first["samples"]["agent_samples"] == 4
    # the invalid candidate was rejected at "load": penalised less than an extraction failure
    assert first["designer_shaping"]["invalid_env"] == pytest.approx(-0.5 * (1 - design_progress("load")))
    assert -0.5 < first["designer_shaping"]["invalid_env"] < 0
    # a real policy update: samples carried signal, the gradient and the weights moved. The
    # one valid design is its skill's only valid one, so its own baseline (advantage 0, as in
    # the reference recipe); the invalid one is measured against it and carries the signal
    for rec in lines:
        update = rec["update"]
        assert update["nonzero_advantages"] >= 1
        assert update["grad_norm"] > 0
        assert update["param_delta_l2"] > 0 and update["param_delta_max"] > 0
        assert rec["timings"]["update_s"] >= 0
    assert first["pool_size"] >= 19
    assert run.learner.steps == 2
    # the store recorded stats for every played environment; designed envs are registered
    from spade_core.store import EnvStore

    store = EnvStore(f"sqlite:///{tmp_path / 'run' / 'store.db'}")
    played = lines[1]["per_env"]
    assert all(store.get(i).latest_stats is not None for i in played)
    assert all(1 <= v["reward_levels"] <= 2 * 2 for v in played.values())  # distinct unhinted returns
    designed = [m for m in store.find(status=EnvStatus.admitted) if m.name.startswith("guess_")]
    assert len(designed) == 2
    assert gym.spec(designed[0].gym_id) is not None
    store.close()
    assert latest_checkpoint(tmp_path / "run") is not None


def test_the_agent_s_reply_shape_reaches_the_rollouts(tmp_path: Path) -> None:
    from spade_trainer.rollout import ReplyShape

    cfg = _config(tmp_path, **{"generation.agent_prefill": '"\\\\boxed{"', "generation.cut_at_action": "true"})
    run = SelfPlayRun(cfg, design_stage_factory=ScriptedDesignStage)
    try:
        run.setup()
        assert run.engine.reply == ReplyShape(prefill="\\boxed{", cut_at_action=True)
    finally:
        run.close()


def test_resuming_continues_identically(tmp_path: Path) -> None:
    straight = _run(_config(tmp_path / "a", iterations=2))
    w_straight = [p.detach().clone() for p in straight.learner.model.parameters()]
    _run(_config(tmp_path / "b", iterations=1))
    resumed = _run(_config(tmp_path / "b", iterations=2), resume=True)
    assert resumed.records[0].iteration == 2
    w_resumed = list(resumed.learner.model.parameters())
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(w_straight, w_resumed, strict=True))
    a = [json.loads(x) for x in (tmp_path / "a" / "run" / "metrics.jsonl").read_text().splitlines()]
    b = [json.loads(x) for x in (tmp_path / "b" / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["per_env"] for r in a] == [r["per_env"] for r in b]
    assert [r["rng_at_start"] for r in a] == [r["rng_at_start"] for r in b]  # the random state resumed too
    assert [r["train"]["loss"] for r in a] == pytest.approx([r["train"]["loss"] for r in b])


def test_a_used_run_dir_needs_resume(tmp_path: Path) -> None:
    _run(_config(tmp_path, iterations=1))
    with pytest.raises(CheckpointError, match="--resume"):
        _run(_config(tmp_path, iterations=1))


def test_resume_refuses_a_different_configuration(tmp_path: Path) -> None:
    _run(_config(tmp_path, iterations=1))
    with pytest.raises(CheckpointError, match="different configuration"):
        _run(_config(tmp_path, iterations=2, plays_per_condition=3), resume=True)
