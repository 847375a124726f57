"""``spade experiment curriculum``: SPADE against the fixed pool, in miniature.

Both arms run end to end on the tiny model; the spade arm's designer samples enter the GRPO
step (the weights move when the children's rewards differ, not when they tie); a designer
reply that makes no child is rejected and counted; evaluation instances never meet training
instances; the fixed arm never changes the rung's knobs."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from spade_designer.knobs import read_knobs
from spade_trainer.curriculum_experiment import (
    LADDER,
    CurriculumExperiment,
    difficulty,
    newcombe,
    reference_success,
    seed_interval,
    strategy_hint,
    summarise_curriculum,
)
from spade_trainer.errors import ConfigError
from spade_trainer.experiment import EVAL_SEED_BASE, LearningExperiment, LearnSettings
from spade_trainer.experiment_settings import (
    DEFAULT_LEVELS,
    FIXED_LEARN,
    CurriculumSettings,
    format_levels,
    parse_levels,
)
from spade_trainer.policy import Generation, Sampling
from spade_trainer.policy_update import GRPOUpdate
from spade_trainer.rollout import Episode, RolloutEngine

SMALL = {"updates": 2, "eval_every": 1, "groups": 2, "group_size": 2, "eval_episodes": 4, "learning_rate": 1e-3,
         "max_new_tokens": 4, "levels": (("easy", 2, 2), ("hard", 7, 3))}


class ScriptedDesigner:
    """Test double of the designer's sampler: the reply continues the prompt's prefill
    (``CANDIDATES=`` or ``GUESSES=``) with ``replies[prefill]``; logprob -1 per token."""

    def __init__(self, tokenizer: Any, replies: dict[str, str]) -> None:
        self.tok, self.replies = tokenizer, replies

    def generate(self, prompts: Sequence[Sequence[int]], *, max_new_tokens: int, sampling: Sampling,
                 seed: Any) -> list[Generation]:
        out = []
        for p in prompts:
            text = self.tok.decode(list(p))
            key = next(k for k in self.replies if text.rstrip().endswith(k))
            ids = self.tok(self.replies[key], add_special_tokens=False)["input_ids"][:max_new_tokens]
            out.append(Generation(ids, [-1.0] * len(ids), False))
        return out


@pytest.fixture()
def experiment(tiny_model: Any, tiny_tokenizer: Any, tmp_path: Path) -> Callable[..., CurriculumExperiment]:
    def make(arm: str, replies: dict[str, str] | None = None, **overrides: Any) -> CurriculumExperiment:
        settings = CurriculumSettings.of(arm=arm, **{**SMALL, **overrides})
        designer = ScriptedDesigner(tiny_tokenizer, replies) if replies is not None else None
        return CurriculumExperiment(settings, tmp_path / f"{arm}-{len(list(tmp_path.iterdir()))}", model=tiny_model,
                                    tokenizer=tiny_tokenizer, log=lambda _: None, designer_policy=designer)

    return make


def test_both_arms_run_end_to_end_and_write_their_outputs(experiment: Callable[..., CurriculumExperiment],
                                                          tmp_path: Path) -> None:
    fixed = experiment("fixed")
    spade = experiment("spade")  # the tiny model designs: its replies are mostly rejected
    dirs = []
    for exp in (fixed, spade):
        result = exp.run()
        data = json.loads((exp.run_dir / "curriculum.json").read_text())
        assert data["arm"] == result["arm"] == exp.settings.arm
        assert list(data["settings"]) == [*SETTINGS_KEYS, "designer_scale_used"]
        assert CurriculumSettings.from_json(data["settings"]) == exp.settings
        assert set(data["levels"]) == {"easy", "hard"}
        for level in data["levels"].values():
            assert [e["update"] for e in level["evaluations"]] == [0, 1, 2]
            assert all(e["episodes"] == 4 and 0 <= e["interval"][0] <= e["mean"] <= e["interval"][1] <= 1
                       for e in level["evaluations"])
        assert [r["update"] for r in data["updates"]] == [1, 2]
        assert all(r["agent_episodes"] == 4 for r in data["updates"])  # the same agent budget in both arms
        assert (exp.run_dir / "curriculum.png").stat().st_size > 1000
        assert "| 2 |" in (exp.run_dir / "curriculum.md").read_text()
        dirs.append(exp.run_dir)
    spade_data = json.loads((spade.run_dir / "curriculum.json").read_text())
    for r in spade_data["updates"]:
        assert r["admitted"] + r["rejected"] == 2 and len(r["children"]) == 2
        assert {"parent", "frontier", "designer_samples", "hinted_episodes"} <= set(r)
    assert (spade.run_dir / "children.png").stat().st_size > 1000
    assert not (fixed.run_dir / "children.png").exists()
    # the same weights and sampling seeds at update 0: both arms measure the same numbers
    fixed_data = json.loads((fixed.run_dir / "curriculum.json").read_text())
    for name in ("easy", "hard"):
        assert (fixed_data["levels"][name]["evaluations"][0]["successes"]
                == spade_data["levels"][name]["evaluations"][0]["successes"])
    summary = summarise_curriculum(dirs, tmp_path / "summary")
    assert set(summary["arms"]) == {"fixed", "spade"}
    text = (tmp_path / "summary" / "curriculum-summary.md").read_text()
    assert "| fixed | 0 |" in text and "| spade | 0 |" in text and "pooled last" in text
    differences = text[text.index("| arm - fixed |"):]
    (diff,) = [r for r in differences.splitlines() if r.startswith("| spade | hard | 1 |")]
    assert "(one seed)" in diff and "Newcombe" in differences
    hard = summary["differences"]["spade"]["hard"]
    assert hard["per_seed"] == [spade_data["levels"]["hard"]["evaluations"][-1]["mean"]
                                - fixed_data["levels"]["hard"]["evaluations"][-1]["mean"]]
    assert (tmp_path / "summary" / "curriculum-summary.png").is_file()


def _steps(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, bool]]:
    """Every GRPO step's stats and whether it moved the weights."""
    seen: list[tuple[Any, bool]] = []
    step = GRPOUpdate.step

    def spy(self: GRPOUpdate, samples: Any) -> Any:
        before = {k: v.clone() for k, v in self.model.state_dict().items()}
        stats = step(self, samples)
        seen.append((stats, any(not torch.equal(before[k], v) for k, v in self.model.state_dict().items())))
        return stats

    monkeypatch.setattr(GRPOUpdate, "step", spy)
    return seen


def _returns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hinted plays win; unhinted plays win only with two numbers listed. Every agent group then
    ties (no agent signal): only the designer's samples can move the weights."""
    monkeypatch.setattr(Episode, "episode_return", property(
        lambda ep: 1.0 if ep.spec.hinted or "CANDIDATES = 2\n" in ep.spec.env.source else 0.0))


def test_the_designer_s_samples_enter_the_update_when_the_children_s_rewards_differ(
        experiment: Callable[..., CurriculumExperiment], monkeypatch: pytest.MonkeyPatch) -> None:
    _returns(monkeypatch)
    steps = _steps(monkeypatch)
    # child 0: 2 numbers (won unhinted: regret 0); child 1: 9 numbers, 1 guess (lost unhinted: regret 1)
    exp = experiment("spade", {"CANDIDATES=": "2", "GUESSES=": "1, CANDIDATES=9"}, reward="regret", updates=1)
    data = exp.run()
    (record,) = data["updates"]
    kids = record["children"]
    assert [(c["candidates"], c["guesses"]) for c in kids] == [(2, 2), (9, 1)]
    assert [c["regret"] for c in kids] == [0.0, 1.0] and [c["reward"] for c in kids] == [0.0, 1.0]
    assert kids[0]["advantage"] < 0 < kids[1]["advantage"]
    assert record["designer_samples"] == 2 and record["frontier"] == {"CANDIDATES": 9, "GUESSES": 1}
    ((stats, moved),) = steps
    assert not stats.skipped and stats.with_signal == 2 and moved  # the designer's two samples, nothing else


def test_designer_samples_whose_rewards_tie_carry_no_signal(experiment: Callable[..., CurriculumExperiment],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    _returns(monkeypatch)
    steps = _steps(monkeypatch)
    exp = experiment("spade", {"CANDIDATES=": "9, GUESSES=1", "GUESSES=": "1, CANDIDATES=9"}, reward="regret",
                     updates=1)
    (record,) = exp.run()["updates"]
    assert [c["reward"] for c in record["children"]] == [1.0, 1.0]
    ((stats, moved),) = steps
    assert stats.skipped and not moved


def test_a_reply_that_makes_no_child_is_rejected_and_counted(experiment: Callable[..., CurriculumExperiment]) -> None:
    exp = experiment("spade", {"CANDIDATES=": "banana", "GUESSES=": "3"})
    first, second = exp.run()["updates"]
    assert first["rejected"] == 1 and first["admitted"] == 1
    bad, good = first["children"]
    assert not bad["admitted"] and "not a number" in bad["reason"] and not bad["trained"]
    assert good["admitted"] and good["guesses"] == 3 and "success" in good and good["trained"]
    assert first["parent"] == {"CANDIDATES": 3, "GUESSES": 2} and first["frontier"] == {"CANDIDATES": 3, "GUESSES": 3}
    # the frontier now has 3 guesses: "GUESSES=3" changes nothing, so both replies are rejected
    assert second["rejected"] == 2 and second["admitted"] == 0 and "changes no knob" in second["children"][1]["reason"]
    assert second["frontier"] == {"CANDIDATES": 3, "GUESSES": 3} and second["designer_samples"] == 0
    assert first["agent_episodes"] == second["agent_episodes"] == 4  # a rejected design's plays go to the parent
    # out of range, or no change at all: rejected too; under "shape" the rejected are trained
    exp = experiment("spade", {"CANDIDATES=": "40", "GUESSES=": "2"}, invalid_designs="shape", updates=1)
    (r,) = exp.run()["updates"]
    assert r["rejected"] == 2 and r["frontier"] == {"CANDIDATES": 3, "GUESSES": 2}
    assert "outside the declared range" in r["children"][0]["reason"]
    assert "changes no knob" in r["children"][1]["reason"]
    assert all(c["trained"] for c in r["children"])


def _played(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """The episode specs every rollout played, split into evaluation and training."""
    played: dict[str, list[Any]] = {"eval": [], "train": []}
    state = {"eval": False}
    run, evaluate = RolloutEngine.run, LearningExperiment.evaluate

    def spy_run(self: RolloutEngine, specs: Any, **kw: Any) -> Any:
        played["eval" if state["eval"] else "train"].extend(specs)
        return run(self, specs, **kw)

    def spy_evaluate(self: LearningExperiment, *args: Any) -> Any:
        state["eval"] = True
        try:
            return evaluate(self, *args)
        finally:
            state["eval"] = False

    monkeypatch.setattr(RolloutEngine, "run", spy_run)
    monkeypatch.setattr(LearningExperiment, "evaluate", spy_evaluate)
    return played


@pytest.mark.parametrize("arm", ["fixed", "spade"])
def test_evaluation_instances_never_meet_training_instances(arm: str, experiment: Callable[..., CurriculumExperiment],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    played = _played(monkeypatch)
    exp = experiment(arm, {"CANDIDATES=": "4", "GUESSES=": "3"} if arm == "spade" else None, group_size=4)
    exp.run()
    train = {s.seed for s in played["train"]}
    evals = {s.seed for s in played["eval"]}
    data = json.loads((exp.run_dir / "curriculum.json").read_text())
    assert len(played["train"]) == sum(r["agent_episodes"] + r.get("hinted_episodes", 0) for r in data["updates"])
    assert train and max(train) < EVAL_SEED_BASE <= min(evals)
    assert evals == set(exp.eval_seeds())


def test_the_fixed_arm_never_changes_knobs_nor_asks_a_designer(experiment: Callable[..., CurriculumExperiment],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    played = _played(monkeypatch)
    monkeypatch.setattr(CurriculumExperiment, "designer_backend", lambda self: pytest.fail("the fixed arm designs"))
    exp = experiment("fixed", updates=3)
    data = exp.run()
    assert played["train"] and not any(s.hinted for s in played["train"])
    for spec in played["train"]:
        assert read_knobs(spec.env.source, "HigherLowerEnv").values() == {"CANDIDATES": 3, "GUESSES": 2}
    assert all(r["knobs"] == [{"CANDIDATES": 3, "GUESSES": 2}] for r in data["updates"])


def test_the_difficulty_scale_and_the_hint() -> None:
    assert reference_success(3, 2) == pytest.approx(7 / 9)
    assert reference_success(2, 2) == 1.0 and reference_success(3, 1) == pytest.approx(1 / 3)
    assert difficulty(2, 2) < difficulty(3, 2) < difficulty(7, 2) < difficulty(15, 1)
    assert "always finds" in strategy_hint(7, 3) and "no strategy is sure" in strategy_hint(7, 2)
    assert parse_levels("easy=2x2, hard=7x3") == (("easy", 2, 2), ("hard", 7, 3))


def test_curriculum_settings_refuse_nonsense() -> None:
    for bad in ({"arm": "both"}, {"reward": "vibes"}, {"levels": (("x", 40, 2),)}, {"levels": ()},
                {"levels": (("a", 2, 2), ("a", 3, 2))}, {"invalid_designs": "keep"}, {"designer_scale": 0.0},
                {"group_size": 1}, {"device": "tpu"}, {"arm": "rlve"}):
        with pytest.raises(ConfigError):
            CurriculumSettings.of(**bad)
    with pytest.raises(ConfigError):
        parse_levels("hard=seven")
    assert CurriculumSettings.of(device="cuda").learn.device == "cuda"  # the device reaches the shared settings


def test_the_shared_settings_live_in_learn_and_the_fixed_three_are_not_options() -> None:
    s = CurriculumSettings.of(arm="spade", seed=3, groups=5, candidates=2, guesses=2, reward="regret")
    assert s.learn == LearnSettings(seed=3, groups=5, candidates=2, guesses=2, **FIXED_LEARN)
    assert (s.arm, s.reward) == ("spade", "regret")
    assert CurriculumSettings().learn == LearnSettings(group_instance="fresh", control="none", trainer="spade")
    # the learning experiment's settings at other knobs: only the knobs change
    assert s.at(7, 3) == replace(s.learn, candidates=7, guesses=3)
    for fixed in ({"control": "eval"}, {"trainer": "trl"}, {"group_instance": "shared"}, {"no_such": 1}):
        with pytest.raises(ConfigError):
            CurriculumSettings.of(**fixed)
    with pytest.raises(ConfigError, match="fixes"):
        CurriculumSettings(learn=LearnSettings())  # control "eval", the learning experiment's default


#: The settings keys of every curriculum.json (the runs under docs/learning/curriculum).
SETTINGS_KEYS = ["arm", "seed", "updates", "eval_every", "groups", "group_size", "eval_episodes", "learning_rate",
                 "temperature", "prefill", "cut_at_action", "max_new_tokens", "candidates", "guesses", "levels",
                 "reward", "invalid_designs", "designer_scale", "designer_max_new_tokens", "device"]


def test_runs_record_flat_settings_that_read_back() -> None:
    s = CurriculumSettings.of(arm="adaptive", seed=2, candidates=2, guesses=2, designer_scale=3.0, device="cuda:1")
    flat = s.to_json()
    assert list(flat) == SETTINGS_KEYS and flat["levels"] == [list(lv) for lv in DEFAULT_LEVELS]
    assert CurriculumSettings.from_json(json.loads(json.dumps(flat))) == s
    # the recorded runs read back, and write their settings again as they were recorded
    runs = sorted((Path(__file__).parents[2] / "docs" / "learning" / "curriculum").glob("*/curriculum.json"))
    assert runs
    for path in runs:
        recorded = json.loads(path.read_text())["settings"]
        back = CurriculumSettings.from_json(recorded)
        assert back.scale == recorded["designer_scale_used"], path
        assert back.to_json() == {"device": "cpu", **{k: v for k, v in recorded.items() if k != "designer_scale_used"}}


def test_the_command_is_registered() -> None:
    from spade_core.app.cli import build_app
    from typer.testing import CliRunner

    for name in ("curriculum", "curriculum-summary"):
        result = CliRunner().invoke(build_app(), ["experiment", name, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
    assert "--arm" in CliRunner().invoke(build_app(), ["experiment", "curriculum", "--help"],
                                         env={"COLUMNS": "200"}).output


def test_the_command_s_defaults_are_the_settings_defaults() -> None:
    import typer
    from spade_core.app.cli import build_app

    group = typer.main.get_command(build_app()).commands["experiment"]  # type: ignore[attr-defined]
    defaults = {p.name: p.default for p in group.commands["curriculum"].params}
    c, _, g = defaults["start"].partition("x")
    built = CurriculumSettings.of(arm=defaults["arm"], levels=parse_levels(defaults["levels"]),
                                  reward=defaults["reward"], invalid_designs=defaults["invalid_designs"],
                                  candidates=int(c), guesses=int(g), updates=defaults["updates"],
                                  eval_every=defaults["eval_every"], groups=defaults["groups"],
                                  group_size=defaults["group_size"], eval_episodes=defaults["eval_episodes"],
                                  learning_rate=defaults["lr"], device=defaults["device"])
    assert built == CurriculumSettings()
    assert format_levels(DEFAULT_LEVELS) == "easy=2x2,default=3x2,hard=7x3"


def test_a_bad_start_is_refused_before_anything_loads(tmp_path: Path) -> None:
    from spade_core.app.cli import build_app
    from typer.testing import CliRunner

    for bad, says in [("2x2,3x3", "write one CANDIDATESxGUESSES"), ("axb", "write one CANDIDATESxGUESSES"),
                      ("1x9", "candidates")]:
        result = CliRunner().invoke(build_app(), ["experiment", "curriculum", "--run-dir", str(tmp_path / "r"),
                                                  "--start", bad], env={"COLUMNS": "200"})
        assert result.exit_code == 2 and says in result.output, (bad, result.output)
    assert not (tmp_path / "r").exists()


def test_the_adaptive_arm_starts_where_it_is_told_rlve_s_difficulty_0_at_the_bottom(
        experiment: Callable[..., CurriculumExperiment], monkeypatch: pytest.MonkeyPatch) -> None:
    import spade_trainer.curriculum_experiment as ce

    monkeypatch.setattr(ce, "_won", lambda ep: False)
    data = experiment("adaptive", groups=4, group_size=4, updates=1, candidates=2, guesses=2).run()
    (first,) = data["updates"]
    assert first["window"]["lo"] == first["window"]["hi"] == 0 and first["knobs"] == [{"CANDIDATES": 2, "GUESSES": 2}]
    assert data["moves"] == []  # the bottom cannot go lower


def test_the_ladder_is_winnable_by_halving_and_ordered_by_difficulty() -> None:
    assert all(c <= 2**g - 1 for c, g in LADDER)
    diffs = [difficulty(c, g) for c, g in LADDER]
    assert diffs == sorted(diffs) and diffs[0] == 0.0 and diffs.count(0.0) == 1
    assert {(2, 2), (3, 2), (7, 3)} <= set(LADDER)  # the evaluation levels are on it


def test_the_adaptive_arm_raises_the_rung_when_the_agent_wins_and_asks_no_designer(
        experiment: Callable[..., CurriculumExperiment], monkeypatch: pytest.MonkeyPatch) -> None:
    import spade_trainer.curriculum_experiment as ce

    monkeypatch.setattr(ce, "_won", lambda ep: True)  # every play wins
    monkeypatch.setattr(CurriculumExperiment, "designer_backend", lambda self: pytest.fail("the adaptive arm designs"))
    played = _played(monkeypatch)
    exp = experiment("adaptive", groups=4, group_size=4, updates=2)  # 16 plays at the top: enough to move
    data = exp.run()
    first, second = data["updates"]
    start = LADDER.index((3, 2))
    assert first["window"]["lo"] == first["window"]["hi"] == start and first["move"] == 1
    assert first["knobs"] == [{"CANDIDATES": 3, "GUESSES": 2}] and first["agent_episodes"] == 16
    assert (second["window"]["lo"], second["window"]["hi"]) == (start, start + 1)
    assert data["moves"][0]["from"] == start and data["moves"][0]["to"] == start + 1
    knobs = {tuple(read_knobs(s.env.source, "HigherLowerEnv").values().values()) for s in played["train"][16:]}
    assert knobs <= {LADDER[start], LADDER[start + 1]} and not any(s.hinted for s in played["train"])
    assert (exp.run_dir / "window.png").stat().st_size > 1000
    assert "| 1 | 8..8 |" in (exp.run_dir / "curriculum.md").read_text()


def test_the_adaptive_arm_lowers_the_rung_when_the_agent_loses(experiment: Callable[..., CurriculumExperiment],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import spade_trainer.curriculum_experiment as ce

    monkeypatch.setattr(ce, "_won", lambda ep: False)
    data = experiment("adaptive", groups=4, group_size=4, updates=1).run()
    ((move,),) = [data["moves"]]
    assert move["to"] == LADDER.index((3, 2)) - 1 and move["accuracy"] == 0.0


def test_the_difference_of_two_rates_has_newcombe_s_interval() -> None:
    # Newcombe (1998), Statistics in Medicine 17:873-890, Table II, method 10
    for args, (lo, hi) in [((56, 70, 48, 80), (0.0524, 0.3339)), ((5, 56, 0, 29), (-0.0381, 0.1926))]:
        d, low, high = newcombe(*args)
        assert d == pytest.approx(args[0] / args[1] - args[2] / args[3])
        assert (round(low, 4), round(high, 4)) == (lo, hi)


def test_an_interval_over_three_seeds_uses_student_s_t() -> None:
    lo, hi = seed_interval([0.1, 0.2, 0.3])
    assert (lo + hi) / 2 == pytest.approx(0.2) and (hi - lo) / 2 == pytest.approx(4.303 * 0.1 / 3**0.5)
    assert seed_interval([0.4]) == (0.4, 0.4)
