"""Configuration, presets, metrics and the HTML report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from spade_trainer.config import load_selfplay_config, parse_override, preset_names
from spade_trainer.errors import ConfigError
from spade_trainer.metrics import MetricsLog, read_metrics
from spade_trainer.report import write_report
from typer.testing import CliRunner


def test_presets_ship_with_the_package() -> None:
    assert {"quickstart", "tiny", "gpu"} <= set(preset_names())
    quick = load_selfplay_config(preset="quickstart")
    assert quick.model.source == "embedded" and quick.model.device == "cpu"


def test_file_then_overrides_win_over_the_preset(tmp_path: Path) -> None:
    f = tmp_path / "run.toml"
    f.write_text('[selfplay]\niterations = 7\n[selfplay.generation]\ntemperature = 0.3\n')
    cfg = load_selfplay_config(preset="quickstart", path=f, overrides=["generation.top_p=0.9"])
    assert (cfg.iterations, cfg.generation.temperature, cfg.generation.top_p) == (7, 0.3, 0.9)
    assert cfg.designs_per_skill == 4  # untouched preset value


def test_every_bad_field_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_selfplay_config(overrides=["iterations=0", "reward.variant=\"vibes\"", "nonsense=1"])
    text = str(err.value)
    assert "iterations" in text and "reward.variant" in text and "nonsense" in text


def test_unknown_preset_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="bases: gpu, learn, quickstart, tiny; ablations on top of a base: adaptive, baseline"):
        load_selfplay_config(preset="huge")


def test_vllm_needs_a_gpu_device() -> None:
    with pytest.raises(ConfigError, match="needs a GPU"):
        load_selfplay_config(overrides=['generation.backend="vllm"'])


def test_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_selfplay_config(path=tmp_path / "nope.toml")


@pytest.mark.parametrize("item,expected", [
    ("a.b=3", (["a", "b"], 3)), ('x="s"', (["x"], "s")), ("x=word", (["x"], "word")), ("f=0.5", (["f"], 0.5)),
])
def test_overrides_are_read_as_toml_values(item: str, expected: tuple) -> None:
    assert parse_override(item) == expected


def test_fingerprint_ignores_only_run_length_and_logging() -> None:
    a = load_selfplay_config(preset="tiny")
    b = load_selfplay_config(preset="tiny", overrides=["iterations=50", 'run_dir="elsewhere"'])
    c = load_selfplay_config(preset="tiny", overrides=["plays_per_condition=5"])
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()


def _records(n: int) -> list[dict]:
    return [{"iteration": i, "designed": 2, "admitted": i % 2, "admission_rate": (i % 2) / 2,
             "admission_by_stage": {"static": 1.0, "load": 0.5}, "regret_mean": 0.1 * i, "regret_max": 0.2 * i,
             "win_rate": 0.5, "hinted_win_rate": 0.7, "measured_difficulty": 0.5, "pool_size": 19 + i,
             "pool_by_skill": {"logic": 3 + i}, "designer_reward_mean": 0.3, "agent_reward_mean": 0.2,
             "train": {"loss": 0.01}} for i in range(1, n + 1)]


def test_metrics_round_trip_and_truncate_on_resume(tmp_path: Path) -> None:
    log = MetricsLog(tmp_path)
    for r in _records(3):
        log.write(r)
    log.write({"iteration": 4, "regret_mean": float("nan")})
    assert [r["iteration"] for r in read_metrics(tmp_path)] == [1, 2, 3, 4]
    assert read_metrics(tmp_path)[-1]["regret_mean"] is None  # NaN is not JSON
    log.truncate_after(2)
    assert [r["iteration"] for r in read_metrics(tmp_path)] == [1, 2]


def test_report_writes_html_and_its_pngs(tmp_path: Path) -> None:
    log = MetricsLog(tmp_path)
    for r in _records(4):
        log.write(r)
    page = write_report(tmp_path)
    names = sorted(p.name for p in page.parent.glob("*.png"))
    assert names == sorted(["regret.png", "win_rate.png", "admission.png", "skill_regret.png", "skill_win_rate.png",
                            "difficulty.png", "pool.png", "rewards.png", "diagnostics.png", "reward_levels.png"])
    html = page.read_text()
    assert all(n in html for n in names) and "<table id=iterations>" in html


def test_report_of_a_folder_without_metrics_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="metrics.jsonl does not exist"):
        write_report(tmp_path)


def test_cli_report_command(tmp_path: Path) -> None:
    from spade_core.app.cli import build_app

    log = MetricsLog(tmp_path)
    for r in _records(2):
        log.write(r)
    result = CliRunner().invoke(build_app(), ["report", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "report" / "report.html").is_file()
    assert json.loads(json.dumps(read_metrics(tmp_path)))  # still readable
