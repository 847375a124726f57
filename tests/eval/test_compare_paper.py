"""``spade compare --paper``: our runs in the paper's columns beside the paper's rows for the
nearest model scale, differences to the baseline in points, columns not run named, a CPU
miniature labelled."""

from __future__ import annotations

from pathlib import Path

import pytest
from spade_core.app.cli import build_app
from spade_core.app.eval_harness import append_to_run, evaluate
from spade_core.evaluation import SuiteContext
from spade_designer.llm.replay import ReplayBackend
from spade_eval.paper import model_scale, nearest_model, paper_table, paper_tables, run_scores
from typer.testing import CliRunner


def _record(suite: str, snapshot: str, *, columns: dict[str, float] | None = None,
            groups: dict[str, float] | None = None) -> dict:
    return {"suite": suite, "snapshot": snapshot, "overall": {"success_rate": 0.0},
            "columns": {k: {"success_rate": v} for k, v in (columns or {}).items()},
            "groups": {k: {"success_rate": v} for k, v in (groups or {}).items()}}


RG = {"Math": 0.25, "Algorithmic": 0.10, "Cognition": 0.05, "Logic": 0.50}


def test_the_papers_tables_are_the_published_figures() -> None:
    t1 = paper_tables()["table1_games"]
    spade4b = next(r for r in t1 if r["model"] == "Qwen3-4B-Instruct-2507" and r["run"] == "SPADE (Games)")
    assert (spade4b["RG-Math"], spade4b["Avg"]) == (44.6, 44.1)
    assert len(t1) == 12 and len(paper_tables()["table2_tooluse"]) == 6


def test_model_scale_and_the_nearest_paper_model() -> None:
    assert model_scale("embedded:SmolLM2-135M-Instruct") == pytest.approx(0.135)
    assert model_scale("Qwen/Qwen3-8B") == 8.0 and model_scale("Qwen3-30B-A3B-Instruct-2507") == 30.0
    assert model_scale("openai:http://127.0.0.1:8011/v1#spade") is None
    assert nearest_model("table1_games", 0.135) == "Qwen3-4B-Instruct-2507"
    assert nearest_model("table1_games", 14.0) == "Qwen3-8B (thinking on)"
    assert nearest_model("table1_games", 32.0) == "Qwen3-30B-A3B-Instruct-2507"
    assert nearest_model("table2_tooluse", None, "30B") == "Qwen3-30B-A3B"
    with pytest.raises(ValueError, match="no paper model"):
        nearest_model("table1_games", None, "70B")


def test_ours_beside_the_papers_rows_with_differences_and_what_was_not_run() -> None:
    snap = "embedded:SmolLM2-135M-Instruct"
    base = [_record("reasoning_gym_hard", snap, columns=RG), _record("aime25", snap, columns={"AIME25": 0.0})]
    spade = [_record("reasoning_gym_hard", snap, columns={**RG, "Math": 0.40}),
             _record("aime25", snap, columns={"AIME25": 0.1})]
    assert run_scores(spade) == pytest.approx({"AIME25": 10.0, "RG-Math": 40.0, "RG-Algo": 10.0, "RG-Cog": 5.0,
                                               "RG-Logic": 50.0})
    t = paper_table([("baseline", base), ("spade", spade)], baseline="baseline")
    assert t.header == ["row", "AIME25", "AIME26", "GPQA-D", "LCB-v6", "RG-Math", "RG-Algo", "RG-Cog", "RG-Logic", "Avg"]
    paper = [r for r in t.rows if r[0].startswith("paper")]
    assert [r[0] for r in paper] == [f"paper Qwen3-4B-Instruct-2507: {run}" for run in (
        "base", "Fixed-env GRPO (GPT-5.5 pool)", "Fixed-env RLVE", "SPADE (Games)")]
    assert paper[0][1] == "47.4" and paper[3][5] == "44.6 (+13.0)" and paper[3][-1] == "44.1 (+5.2)"
    ours = {r[0]: r for r in t.rows if r[0].startswith("ours")}
    b, s = ours["ours: baseline (baseline) [CPU miniature]"], ours["ours: spade [CPU miniature]"]
    assert b[1:] == ["0.0", "not run", "not run", "not run", "25.0", "10.0", "5.0", "50.0", "18.0 (of 5)"]
    assert s[1:] == ["10.0 (+10.0)", "not run", "not run", "not run", "40.0 (+15.0)", "10.0 (+0.0)", "5.0 (+0.0)",
                     "50.0 (+0.0)", "23.0 (of 5) (+5.0)"]
    notes = "\n".join(t.notes)
    assert ("not run by any of our runs: AIME26 (spade eval --suite aime26), GPQA-D (spade eval --suite gpqa_diamond), "
            "LCB-v6 (spade eval --suite livecodebench)") in notes
    assert not any("no suite in this tree" in n for n in t.notes)  # Table 1 has a suite for every column
    assert "CPU miniature: baseline, spade" in notes and "not comparable" in notes


def test_a_full_scale_run_is_not_labelled_a_miniature_and_picks_its_scale() -> None:
    run = [_record("reasoning_gym_hard", "Qwen/Qwen3-8B", columns=RG)]
    t = paper_table([("base8b", run)])
    assert t.rows[0][0].startswith("paper Qwen3-8B (thinking on)")
    assert t.rows[-1][0] == "ours: base8b (baseline)" and not any("CPU miniature" in n for n in t.notes)


def test_spade_compare_paper_on_runs_evaluated_through_the_harness(tmp_path: Path) -> None:
    """Two runs evaluated on a slice of reasoning_gym_hard (one task per column) by the
    replay backend, stored as `spade eval --run` stores them, then `spade compare --paper`."""
    pytest.importorskip("reasoning_gym")
    from spade_reasoning_gym.hard import hard_items

    items = hard_items(SuiteContext(None, None), size=2, tasks="gcd,base_conversion,number_sequence,syllogism")
    runs = []
    for name, right in (("baseline", False), ("spade", True)):
        if right:
            recorded = {}
            from spade_core.app.eval_harness import SYSTEM_PROMPT
            from spade_designer.llm.replay import conversation_key

            for item in items:
                env = item.make_env()
                obs, _ = env.reset(seed=item.seed)
                recorded[conversation_key([{"role": "system", "content": SYSTEM_PROMPT},
                                           {"role": "user", "content": obs}])] = env.solution()
            policy = ReplayBackend(recorded=recorded)
        else:
            policy = ReplayBackend(rules=[(".", "\\boxed{no answer here}")])
        result = evaluate(policy, items, suite="reasoning_gym_hard", snapshot="embedded:SmolLM2-135M-Instruct", size=2)
        (tmp_path / name).mkdir()
        append_to_run(result, tmp_path / name)
        runs.append(str(tmp_path / name))
    r = CliRunner().invoke(build_app(), ["compare", *runs, "--baseline", "baseline", "--paper",
                                         "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert "ours beside the paper's" in r.output and "CPU miniature" in r.output
    page = (tmp_path / "out" / "compare.html").read_text()
    assert page.count("100.0 (+100.0)") == 4  # spade's RG columns against the baseline's zeros
    assert "paper Qwen3-4B-Instruct-2507: SPADE (Games)" in page and "not run" in page
