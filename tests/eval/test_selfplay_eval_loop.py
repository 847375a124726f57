"""End to end on CPU: a `tiny` fixed-pool baseline run and a `tiny` SPADE run, each
evaluating its policy before the first iteration and after every one on a slice of the
`registry` suite (seed environments, played by the core's harness with the policy being
trained), then `spade compare` of the two: its tables and plots.

Every part is real: the designer and its sandboxed validation (SPADE run), the sandbox
pool for rollouts, TRL GRPO updates, the suite from the plugin registry."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from spade_core.app.cli import build_app
from spade_core.config import load_config
from spade_eval.results import read_jsonl
from spade_trainer.config import load_selfplay_config
from spade_trainer.errors import ConfigError
from spade_trainer.plan import plan_run
from spade_trainer.selfplay import SelfPlayRun
from typer.testing import CliRunner

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

#: A seed environment whose episodes are short: two episodes (seeds 0, 1) per evaluation.
EVAL_SETTINGS = ["eval.every=1", 'eval.options={ids="code_breaker-v1"}', "eval.size=2", "eval.max_turns=3"]


def _run(presets: list[str], run_dir: Path) -> Path:
    cfg = load_selfplay_config(preset=presets, overrides=[f'run_dir="{run_dir}"', "iterations=2", *EVAL_SETTINGS])
    SelfPlayRun(cfg, spade_config=load_config()).run()
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("runs")
    home = root / "home"
    home.mkdir()
    mp = pytest.MonkeyPatch()
    mp.setenv("SPADE_HOME", str(home))
    try:
        return _run(["tiny", "baseline"], root / "baseline"), _run(["tiny"], root / "spade")
    finally:
        mp.undo()


def _evals(run: Path) -> list[dict]:
    return read_jsonl(run / "evals.jsonl")


@pytest.mark.slow
def test_each_run_evaluates_the_initial_policy_and_every_iteration(runs: tuple[Path, Path]) -> None:
    for run in runs:
        evals = _evals(run)
        metrics = read_jsonl(run / "metrics.jsonl")
        assert [e["iteration"] for e in evals] == [0, 1, 2]
        assert {e["suite"] for e in evals} == {"registry"} and {e["snapshot"] for e in evals} == {
            "step-0", "step-1", "step-2"}
        for e in evals:
            assert e["overall"]["n"] == 2 and e["options"] == {"ids": "code_breaker-v1"}
            assert 0.0 <= e["overall"]["success_rate"] <= 1.0 and 1 <= e["overall"]["mean_turns"] <= 3
            # what the run had played when it was measured: the metrics of the iterations before
            done = [m for m in metrics if m["iteration"] <= e["iteration"]]
            assert e["run_episodes"] == sum(m["episodes"] for m in done)
            assert e["run_env_steps"] == sum(m["env_steps"] for m in done)
        assert evals[0]["run_episodes"] == 0 < evals[1]["run_episodes"] < evals[2]["run_episodes"]


@pytest.mark.slow
def test_the_baseline_trains_the_agent_on_the_fixed_pool_without_a_designer(runs: tuple[Path, Path]) -> None:
    baseline, spade = runs
    for m in read_jsonl(baseline / "metrics.jsonl"):
        assert m["designed"] == 0 and m["admission_rate"] is None and m["regret_mean"] is None
        # two seed environments, two unhinted plays each; the agent's samples are all there is
        assert m["envs_played"] == 2 and m["episodes"] == 4 and m["win_rate"] is not None
        assert m["samples"]["designer_samples"] == 0 and m["samples"]["agent_samples"] >= 1
        # the update took every agent sample; it skipped its passes only when none carried signal
        assert m["train"]["samples"] == m["samples"]["agent_samples"]
        assert m["train"]["skipped"] == (m["samples"]["nonzero_advantages"] == 0)
        assert m["train"]["skipped"] or m["train"]["loss"] is not None
    for m in read_jsonl(spade / "metrics.jsonl"):
        assert m["designed"] == 2 and m["episodes"] == 8  # hinted and unhinted plays
        assert m["samples"]["designer_samples"] >= 1
    assert not (baseline / "designs.jsonl").exists() or not (baseline / "designs.jsonl").read_text().strip()


@pytest.mark.slow
def test_compare_shows_both_runs_per_iteration_with_differences_to_the_baseline(
    runs: tuple[Path, Path], tmp_path: Path,
) -> None:
    baseline, spade = runs
    out = tmp_path / "compare"
    r = CliRunner().invoke(build_app(), ["compare", str(baseline), str(spade), "--baseline", "baseline",
                                         "--out", str(out)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    text = r.output
    assert "every evaluation" in text and "final evaluation" in text
    final_b, final_s = (_evals(run)[-1]["overall"]["success_rate"] for run in runs)
    # the final table: the baseline's score, and SPADE's with its difference in points
    assert re.search(r"baseline \(baseline\)\s*│\s*" + re.escape(f"{final_b:.1%}"), text), text
    assert re.search(r"spade\s*│\s*" + re.escape(f"{final_s:.1%} ({(final_s - final_b) * 100:+.1f})"), text), text
    # every evaluated iteration is a row with both runs' scores and episodes played
    for it in (0, 1, 2):
        scores = [f"{e['overall']['success_rate']:.1%} @ {e['run_episodes']} ep"
                  for run in runs for e in _evals(run) if e["iteration"] == it]
        assert re.search(rf"registry\s*│\s*{it}\s*│\s*{re.escape(scores[0])}\s*│\s*{re.escape(scores[1])}", text), text
    page = (out / "compare.html").read_text()
    assert "<table id=per_iteration>" in page and "<table id=final>" in page
    shown = set(re.findall(r'src="([^"/]+\.png)"', page))
    assert shown == {"registry_iterations.png", "registry_steps.png", "admission_rate.png", "regret_mean.png"}
    for name in shown:
        assert (out / name).stat().st_size > 5_000  # drawn, not an empty canvas


@pytest.mark.slow
def test_a_resumed_run_evaluates_again_what_it_redoes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPADE_HOME", str(tmp_path / "home"))
    run_dir = tmp_path / "run"
    sets = [f'run_dir="{run_dir}"', "checkpoint_every=1", *EVAL_SETTINGS, "eval.size=1"]
    SelfPlayRun(load_selfplay_config(preset="tiny+baseline", overrides=[*sets, "iterations=1"]),
                spade_config=load_config()).run()
    # an evaluation the crashed run made after its last checkpoint
    with (run_dir / "evals.jsonl").open("a") as f:
        f.write(json.dumps({"suite": "registry", "iteration": 2, "overall": {"success_rate": 1.0}}) + "\n")
    SelfPlayRun(load_selfplay_config(preset="tiny+baseline", overrides=[*sets, "iterations=2"]),
                spade_config=load_config()).run(resume=True)
    evals = _evals(run_dir)
    assert [e["iteration"] for e in evals] == [0, 1, 2]  # the initial policy is not measured again
    assert evals[2]["overall"]["n"] == 1 and evals[2]["run_episodes"] == 8


def test_an_evaluation_suite_that_is_not_installed_fails_the_plan() -> None:
    cfg = load_selfplay_config(preset="tiny", overrides=["eval.every=1", 'eval.suite="nope"'])
    with pytest.raises(ConfigError, match=r"eval.suite = 'nope' is not an installed evaluation suite.*registry"):
        plan_run(cfg)
    cfg = load_selfplay_config(preset="tiny", overrides=["eval.every=1", "eval.options={colour=1}"])
    with pytest.raises(ConfigError, match="suite 'registry' takes no option colour"):
        plan_run(cfg)
    assert plan_run(load_selfplay_config(preset="tiny", overrides=['eval.suite="nope"'])).config.eval.every == 0
