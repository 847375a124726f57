"""What ``spade report`` shows and what a run keeps for it (designs, transcripts).

The plots are checked through what matplotlib drew (tick values, limits, artists), so a
regression to fractional iteration ticks or auto-scaled win rates fails here."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace as NS

import pytest
from spade_trainer.metrics import MetricsLog
from spade_trainer.run_archive import DESIGNS_FILE, TRANSCRIPTS_FILE, ArchiveLimits, RunArchive, read_archive

from spade_trainer import report


def _record(i: int) -> dict:
    return {"iteration": i, "designed": 4, "admitted": 1, "valid": 2, "rejected_at": {"contract": 2},
            "envs_played": 2, "episodes": 8, "regret_mean": 0.01 * i, "regret_max": 0.02 * i,
            "win_rate": 0.5, "hinted_win_rate": 0.52, "return_unhinted": 0.4, "return_hinted": 0.45,
            "pool_size": 19 + i, "pool_by_skill": {"logic": 3 + i},
            "per_env": {"a-v1": {"regret": 0.1, "win_rate": 0.25}, "b-v1": {"regret": 0.3, "win_rate": 0.75}},
            "designer_reward_mean": 0.3, "agent_reward_mean": 0.2, "train": {"loss": 0.01},
            "update": {"param_delta_l2": 1e-3}}


def _candidate(env_id: str | None, admitted: bool, stage: str | None = None) -> NS:
    return NS(skill="logic", env_id=env_id, valid=admitted, admitted=admitted, failed_stage=stage,
              stages_passed=("static",), reasons=() if admitted else ("step() returned 4 values, expected 5",),
              novelty=None, source="class KeyEnv:\n    pass  # <b>not markup</b>\n", hint="look under the mat")


def _episode(env_id: str, hinted: bool, ret: float) -> NS:
    return NS(spec=NS(env=NS(env_id=env_id), hinted=hinted), episode_return=ret, turns=2, terminated=True,
              truncated=False, hung=False, error=None, rewards=[0.0, ret],
              messages=[{"role": "user", "content": "A locked door."}, {"role": "assistant", "content": "\\boxed{open}"}])


def _run(tmp_path: Path, n: int) -> Path:
    log = MetricsLog(tmp_path)
    archive = RunArchive(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"domain": "games", "model": {"source": "tiny"}}))
    for i in range(1, n + 1):
        log.write(_record(i))
        archive.record_designs(i, [_candidate("a-v1", True), _candidate(None, False, "contract")])
        archive.record_episodes(i, [_episode("a-v1", h, 1.0 if h else 0.0) for h in (True, False, True, False, True)])
    return tmp_path


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """The axes of every figure the report saves, by file name."""
    axes: dict[str, object] = {}
    save = report._Figure.save

    def keep(self: report._Figure, path: Path, **kw: object) -> Path:
        out = save(self, path, **kw)
        axes[path.name] = self.ax
        return out

    monkeypatch.setattr(report._Figure, "save", keep)
    return axes


@pytest.mark.parametrize("n", [2, 400])
def test_iteration_axes_have_integer_ticks_at_any_length(tmp_path: Path, drawn: dict, n: int) -> None:
    report.write_report(_run(tmp_path, n))
    assert len(drawn) == 10  # the two diagnostics plots have an iteration axis too
    for name, ax in drawn.items():
        lo, hi = ax.get_xlim()
        ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
        assert ticks and all(float(t).is_integer() for t in ticks), (name, ticks)
        assert len(ticks) <= 12, name  # readable at 400 iterations too


def test_win_rates_keep_a_fixed_axis_and_hinted_differs_from_unhinted_by_marker(tmp_path: Path, drawn: dict) -> None:
    report.write_report(_run(tmp_path, 2))
    ax = drawn["win_rate.png"]
    assert ax.get_ylim()[0] < 0 and ax.get_ylim()[1] > 1  # 0.50 against 0.52 is not blown up to fill the plot
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert lines["win rate, unhinted"].get_marker() != lines["win rate, hinted"].get_marker()
    assert lines["win rate, unhinted"].get_linestyle() != lines["win rate, hinted"].get_linestyle()


def test_rejections_are_stacked_bars_by_stage(tmp_path: Path, drawn: dict) -> None:
    report.write_report(_run(tmp_path, 3))
    ax = drawn["admission.png"]
    labels = [c.get_label() for c in ax.containers]
    assert labels == ["admitted", "valid, not admitted", "rejected at contract"]
    heights = [[bar.get_height() for bar in c] for c in ax.containers]
    assert heights == [[1.0] * 3, [1.0] * 3, [2.0] * 3]


def test_long_runs_are_binned_and_smoothed(tmp_path: Path, drawn: dict) -> None:
    report.write_report(_run(tmp_path, 400))
    assert len(drawn["admission.png"].containers[0]) <= 40
    labels = [line.get_label() for line in drawn["regret.png"].get_lines()]
    assert "mean (rolling mean)" in labels


def test_the_page_says_what_ran_and_shows_designs_transcripts_and_environments(tmp_path: Path) -> None:
    page = report.write_report(_run(tmp_path, 2)).read_text()
    assert "2 iterations (1 to 2) of tiny on the games domain" in page
    assert "wrote 8 candidate environments, of which 2 were admitted (25%)" in page
    assert "rejected at contract" in page and "step() returned 4 values, expected 5" in page
    assert "look under the mat" in page
    assert "&lt;b&gt;not markup&lt;/b&gt;" in page and "<b>not markup</b>" not in page  # code is escaped
    assert "\\boxed{open}" in page and "hinted" in page
    assert "<table id=envs>" in page and "b-v1" in page
    assert '{"iteration"' not in page.split("<h2>Configuration")[0]  # no raw JSON dict as a header


def test_archive_keeps_a_bounded_sample(tmp_path: Path) -> None:
    archive = RunArchive(tmp_path, ArchiveLimits(transcripts_per_env=1, max_text_chars=5, max_file_bytes=2_000))
    eps = [_episode("a-v1", h, 1.0) for h in (True, False, True, False)] + [_episode("b-v1", False, 0.0)]
    assert archive.record_episodes(1, eps) == 3  # one hinted + one unhinted of a, one unhinted of b
    rows = read_archive(tmp_path / TRANSCRIPTS_FILE)
    assert rows[0]["messages"][0]["content"].startswith("A loc") and "more characters" in rows[0]["messages"][0]["content"]
    for i in range(2, 200):
        archive.record_designs(i, [_candidate("a-v1", True)])
    assert (tmp_path / DESIGNS_FILE).stat().st_size <= 2_000 + 200
    archive.truncate_after(1)
    assert {r["iteration"] for r in read_archive(tmp_path / DESIGNS_FILE)} <= {1}


@pytest.mark.slow
def test_a_real_run_keeps_its_designs_and_transcripts_and_the_report_shows_them(tmp_path: Path) -> None:
    import os

    from spade_trainer.config import load_selfplay_config
    from spade_trainer.selfplay import SelfPlayRun

    from .scripted import ScriptedDesignStage

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    cfg = load_selfplay_config(preset="tiny", overrides=[f'run_dir="{tmp_path / "run"}"', "iterations=1",
                                                         "envs_per_iteration=2", "transcripts_per_env=1"])
    SelfPlayRun(cfg, design_stage_factory=ScriptedDesignStage).run()
    run = tmp_path / "run"
    designs = read_archive(run / DESIGNS_FILE)
    assert len(designs) == 2 and {d["admitted"] for d in designs} == {True, False}
    assert any(d["failed_stage"] == "load" for d in designs)
    transcripts = read_archive(run / TRANSCRIPTS_FILE)
    played = {(t["env_id"], t["hinted"]) for t in transcripts}
    assert len(transcripts) == len(played) == 4  # 2 environments x (hinted, unhinted) x 1
    assert all(t["messages"] and t["messages"][0]["content"] for t in transcripts)
    page = report.write_report(run).read_text()
    assert "rejected at load" in page and transcripts[0]["env_id"] in page
