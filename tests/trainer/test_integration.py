"""Integration: two self-play iterations on CPU with a tiny model and every real part —
the real designer (corpus, memory, prompts, validation pipeline in its sandbox), the
sandbox pool for rollouts, the SQLite store, TRL GRPO steps, Gymnasium registration."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from spade_trainer.config import load_selfplay_config
from spade_trainer.report import write_report
from spade_trainer.selfplay import SelfPlayRun, latest_checkpoint
from spade_trainer.shaping_signals import DESIGN_GATES

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

pytestmark = pytest.mark.slow


def test_two_iterations_with_the_real_designer(tmp_path: Path) -> None:
    cfg = load_selfplay_config(
        preset="tiny",
        overrides=[f'run_dir="{tmp_path / "run"}"', "iterations=2", "designer.repair_attempts=0",
                   "designer.document_words=200"],
    )
    run = SelfPlayRun(cfg)
    records = run.run()
    assert [r.iteration for r in records] == [1, 2]
    lines = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    for rec in lines:
        # a 2-layer random model writes no working environment: every candidate is rejected,
        # with the stage that rejected it, and the designer is trained on that outcome
        assert rec["designed"] == 2 and rec["admitted"] == 0
        assert sum(rec["rejected_at"].values()) == 2
        # graded: each rejected candidate costs 0.5 * (1 - how far it got), never 0
        assert -0.5 * 2 <= rec["designer_shaping"]["invalid_env"] < 0
        assert set(rec["rejected_at"]) <= set(DESIGN_GATES)
        # the agent played seed environments, hinted and unhinted, and the policy was updated
        assert rec["envs_played"] == 2 and rec["episodes"] == 8
        assert rec["samples"]["designer_samples"] == 2 and rec["samples"]["agent_samples"] >= 1
        # the update is measured: weights move exactly when some sample carries gradient, and
        # without one there is no pass at all
        update = rec["update"]
        assert rec["train"]["skipped"] == update["skipped"] == (update["nonzero_advantages"] == 0)
        if update["skipped"]:
            assert rec["train"]["loss"] is None and update["param_delta_l2"] is None
        else:
            assert rec["train"]["loss"] is not None
            assert update["param_delta_l2"] > 0 and update["grad_norm"] > 0
    assert lines[0]["skills"] != lines[1]["skills"]  # skills rotate round-robin
    assert latest_checkpoint(tmp_path / "run") is not None
    page = write_report(tmp_path / "run")
    pngs = {p.name for p in page.parent.glob("*.png")}
    assert page.is_file() and len(pngs) >= 6
    assert pngs == set(re.findall(r'src="([^"/]+\.png)"', page.read_text()))  # each plot shown, none missing
