"""The baseline and the ablations as presets: each is laid over a base (`gpu`, `tiny`) and
changes the resolved configuration in exactly the keys its ablation must (the table in
docs/trainer.md), passes `spade selfplay --check` wherever its base does, and is named by
`spade selfplay --help`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from spade_trainer.config import (
    ablation_names,
    base_preset_names,
    load_selfplay_config,
    preset_table,
    split_presets,
)
from spade_trainer.errors import ConfigError
from spade_trainer.plan import plan_run
from spade_trainer.rewards import DesignerRewardSpec, DesignerRewardVariant, designer_reward

#: What each ablation changes in the resolved configuration (dotted key -> value), nothing else.
EXPECTED_CHANGES: dict[str, dict[str, Any]] = {
    "baseline": {"fixed_pool": True},
    "adaptive": {"fixed_pool": True, "adaptive.enabled": True},
    "no_corpus": {"designer.corpus": "none"},
    "no_memory": {"designer.memory": "none"},
    "solve_rate_reward": {"reward.variant": "plateau", "reward.win_rate": "solve_rate"},
    "learning_potential": {"reward.variant": "learning_potential"},
    "no_designer_training": {"train_designer": False},
    "spade": {"designer.edit.share": 1.0, "designer.edit.kind": "parameter"},
}
BASES = ["gpu", "tiny"]
MISSING = object()


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):  # an empty table adds no key: only set values count
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def resolved(*presets: str) -> dict[str, Any]:
    return flatten(load_selfplay_config(preset=list(presets)).model_dump(mode="json"))


def changes(base: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    keys = set(base) | set(other)
    return {k: other.get(k, MISSING) for k in sorted(keys) if base.get(k, MISSING) != other.get(k, MISSING)}


def test_every_ablation_is_specified_here_and_the_bases_are_the_run_presets() -> None:
    assert sorted(ablation_names()) == sorted(EXPECTED_CHANGES)
    assert set(BASES) <= set(base_preset_names())
    assert not set(ablation_names()) & set(base_preset_names())


@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("ablation", sorted(EXPECTED_CHANGES))
def test_an_ablation_changes_its_base_exactly_where_it_must(base: str, ablation: str) -> None:
    assert changes(resolved(base), resolved(base, ablation)) == EXPECTED_CHANGES[ablation]


@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("ablation", sorted(EXPECTED_CHANGES))
def test_an_ablation_plans_a_run(base: str, ablation: str) -> None:
    plan = plan_run(load_selfplay_config(preset=[base, ablation]))
    rows = dict(plan.rows())
    if ablation in ("baseline", "adaptive"):
        assert rows["designs per iteration"].startswith("none: fixed pool")
        assert ("; adaptive: each environment's declared knobs" in rows["designs per iteration"]) == (
            ablation == "adaptive")
        assert "unhinted (no regret measured)" in rows["episodes per iteration"]
        # no designer sample: the update is sized for the agent's episodes alone
        assert plan.designer_samples == 0
        assert plan.expected_samples == plan.config.agent_samples_per_iteration
    elif ablation == "no_designer_training":
        assert "not trained" in rows["designer"]
        assert plan.designer_samples == 0
    else:
        assert plan.designer_samples > 0


def test_the_arms_of_the_learning_comparison_differ_only_in_what_makes_each_arm() -> None:
    fixed = resolved("learn")
    assert changes(fixed, resolved("learn", "spade")) == {
        "fixed_pool": False, "designer.edit.share": 1.0, "designer.edit.kind": "parameter"}
    assert changes(fixed, resolved("learn", "adaptive")) == {"adaptive.enabled": True}
    # the quickstart is the SPADE arm, shorter: what differs is its length and how often it measures
    assert changes(resolved("learn", "spade"), resolved("quickstart")) == {
        "run_dir": "runs/quickstart", "iterations": 4, "checkpoint_every": 4, "learning.every": 1,
        "learning.episodes": 48, "learning.label": "spade"}


def test_presets_combine_in_order_and_name_their_mistakes() -> None:
    assert split_presets("tiny+baseline") == ["tiny", "baseline"]
    assert split_presets(["tiny", "no_corpus+no_memory"]) == ["tiny", "no_corpus", "no_memory"]
    both = load_selfplay_config(preset="tiny+no_corpus+no_memory")
    assert (both.designer["corpus"], both.designer["memory"]) == ("none", "none")
    assert both.designer["document_words"] == 100  # the base's table is kept beneath
    assert preset_table("tiny+baseline") == preset_table(["tiny", "baseline"])
    with pytest.raises(ConfigError, match="choose one base preset"):
        load_selfplay_config(preset=["tiny", "gpu"])
    with pytest.raises(ConfigError, match="must come first"):
        load_selfplay_config(preset=["baseline", "tiny"])
    with pytest.raises(ConfigError, match=r"unknown preset 'fixed'.*ablations on top of a base: adaptive, baseline"):
        load_selfplay_config(preset=["tiny", "fixed"])


def test_a_fixed_pool_needs_a_pool_and_cannot_train_on_hints() -> None:
    with pytest.raises(ConfigError, match="fixed_pool = true trains on a pool that is not there"):
        load_selfplay_config(preset="tiny+baseline", overrides=["import_seed_pool=false"])
    with pytest.raises(ConfigError, match="train_on_hinted"):
        load_selfplay_config(preset="tiny+baseline", overrides=["train_on_hinted=true"])


def test_the_plateau_variant_has_no_regret_term() -> None:
    spec = DesignerRewardSpec(variant=DesignerRewardVariant.plateau)
    for p in (0.0, 0.2, 0.5, 0.7, 1.0):
        # regret changes nothing; the reward is the blend's plateau alone
        assert designer_reward(0.0, p, spec) == designer_reward(0.9, p, spec) == spec.plateau(p)
    assert designer_reward(0.9, 0.5, spec) == 1.0
    assert designer_reward(0.9, 0.95, spec) == 0.0  # solved almost always: nothing, whatever the regret


def _invoke_check(presets: list[str], run: Path) -> Any:
    from spade_core.app.cli import build_app
    from typer.testing import CliRunner

    args = ["selfplay", *[a for p in presets for a in ("--preset", p)], "--run-dir", str(run), "--check"]
    return CliRunner().invoke(build_app(), args)


def _missing(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("missing:")]


@pytest.mark.parametrize("base", BASES)
def test_every_ablation_passes_the_check_wherever_its_base_does(base: str, tmp_path: Path) -> None:
    reference = _invoke_check([base], tmp_path / "run")
    for ablation in sorted(EXPECTED_CHANGES):
        result = _invoke_check([base, ablation], tmp_path / "run")
        # the same verdict as the base: ready (0), or only what this machine lacks for it (3)
        assert result.exit_code == reference.exit_code, result.output
        assert _missing(result.output) == _missing(reference.output)
        assert f"preset {base}+{ablation}" in result.output
    if base == "tiny" or torch.cuda.is_available():
        assert reference.exit_code == 0 and "ready:" in reference.output
    assert not (tmp_path / "run").exists()


def test_the_help_names_every_preset() -> None:
    from spade_core.app.cli import build_app
    from typer.testing import CliRunner

    result = CliRunner().invoke(build_app(), ["selfplay", "--help"], env={"COLUMNS": "400"})
    text = " ".join(result.output.split())
    for name in [*base_preset_names(), *ablation_names()]:
        assert name in text, name


def test_the_adaptive_settings_need_a_fixed_pool_and_ordered_thresholds() -> None:
    with pytest.raises(ConfigError, match="adaptive.enabled = true adapts the fixed pool's knobs"):
        load_selfplay_config(preset="tiny", overrides=["adaptive.enabled=true"])
    with pytest.raises(ConfigError, match="lower_at"):
        load_selfplay_config(preset="tiny+adaptive", overrides=["adaptive.lower_at=0.95"])
    assert load_selfplay_config(preset="tiny+adaptive").adaptive.levels == 6


def test_the_plan_says_whether_a_run_measures_its_learning_curve() -> None:
    rows = dict(plan_run(load_selfplay_config(preset=["quickstart"])).rows())
    assert rows["learning curve"].startswith("higher_lower: 48 held-out instances")
    assert "learning-rate-0 control" in rows["learning curve"]
    assert dict(plan_run(load_selfplay_config(preset=["tiny"])).rows())["learning curve"] == "off"
