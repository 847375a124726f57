"""``spade eval --suite bfcl``: BFCL-v4 multi-turn entries as episodes, scored by the
benchmark's official checker.

Policies are real backends: the replay backend answering with recorded replies (the
ground truth, or a deliberate near miss) for exact figures, and the embedded model on one
entry through the command line (marked ``model``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("bfcl_eval")
pytest.importorskip("mpmath")

from spade_core.actions import ToolCall
from spade_core.app.cli import build_app
from spade_core.evaluation import EvalItem, SuiteContext
from spade_core.plugins import get_plugins
from spade_designer.llm.replay import ReplayBackend, conversation_key
from spade_eval.harness import SYSTEM_PROMPT, evaluate
from spade_tooluse import bfcl
from typer.testing import CliRunner

CTX = SuiteContext(None, None)


def recorded_replies(items: list[EvalItem], replies_for) -> dict[str, str]:
    """Replies keyed by the exact conversation the harness will send: each item played with
    ``replies_for(env)`` (one reply per agent message), as the harness builds its messages.

    Entries of different categories can open with the same conversation (a ``long_context``
    entry asks what its ``base`` twin asks): items whose recorded replies would collide are
    refused, as no deterministic policy could give both."""
    recorded: dict[str, str] = {}
    for item in items:
        env = item.make_env()
        obs, _ = env.reset(seed=item.seed)
        messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": obs}]
        for reply in replies_for(env):
            key = conversation_key(messages)
            if recorded.setdefault(key, reply) != reply:
                raise ValueError(f"{item.label}: a conversation another item has, with another reply")
            obs, _, terminated, _, _ = env.step(reply)
            if terminated:
                break
            messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": obs}]
        env.close()
    return recorded


def test_the_suite_is_registered_by_the_tooluse_plugin_and_runs_in_process() -> None:
    suite = get_plugins().eval_suites()["bfcl"]
    assert suite is bfcl.SUITE and suite.trusted
    assert set(suite.options) == {"categories", "ids", "data", "stop_on_failure"}


def test_items_are_drawn_per_category_reproducibly() -> None:
    a = bfcl.bfcl_items(CTX, size=3, seed=7, categories="base,miss_param")
    assert [i.label for i in a] == [i.label for i in bfcl.bfcl_items(CTX, size=3, seed=7, categories="base,miss_param")]
    assert [i.group for i in a] == ["multi_turn_base"] * 3 + ["multi_turn_miss_param"] * 3
    # a category's draw does not depend on the other categories chosen
    assert [i.label for i in bfcl.bfcl_items(CTX, size=3, seed=7, categories="miss_param")] == [i.label for i in a[3:]]
    assert [i.label for i in a] != [i.label for i in bfcl.bfcl_items(CTX, size=3, seed=8, categories="base,miss_param")]
    # played in file order, each entry once; the whole category from size 200 on
    numbers = [int(i.label.rsplit("_", 1)[1]) for i in a[:3]]
    assert numbers == sorted(set(numbers))
    everything = bfcl.bfcl_items(CTX, size=500, categories=["long_context"])
    assert [i.label for i in everything] == [f"multi_turn_long_context_{n}" for n in range(200)]
    default = bfcl.bfcl_items(CTX, size=1)
    assert [i.group for i in default] == [f"multi_turn_{c}" for c in bfcl.CATEGORIES]
    named = bfcl.bfcl_items(CTX, ids="multi_turn_miss_func_3, multi_turn_base_0")
    assert [i.label for i in named] == ["multi_turn_miss_func_3", "multi_turn_base_0"]
    # every episode can end by itself before the harness's turn limit
    entry = bfcl.get_entry("multi_turn_base_0")
    assert named[1].max_turns == len(entry.ground_truth) * (bfcl.STEP_LIMIT + 1)


def test_bad_options_are_named() -> None:
    with pytest.raises(bfcl.BfclDataError, match="unknown BFCL multi-turn category poetry"):
        bfcl.bfcl_items(CTX, categories="base,poetry")
    with pytest.raises(bfcl.BfclDataError, match="no BFCL multi-turn entry multi_turn_base_999"):
        bfcl.bfcl_items(CTX, ids="multi_turn_base_0,multi_turn_base_999")
    with pytest.raises(bfcl.BfclDataError, match="stop_on_failure takes true or false"):
        bfcl.bfcl_items(CTX, stop_on_failure="sometimes")
    with pytest.raises(bfcl.BfclDataError, match="does not exist"):
        bfcl.bfcl_items(CTX, data="no/such/folder")
    with pytest.raises(bfcl.BfclDataError, match="size must be at least 1"):
        bfcl.bfcl_items(CTX, size=0)


def test_another_data_folder_is_read_instead_of_the_installed_one(tmp_path: Path) -> None:
    """``data=`` takes a folder laid out as bfcl_eval/data: here a copy holding two base entries."""
    src = bfcl.data_dir()
    (tmp_path / "possible_answer").mkdir()
    (tmp_path / "multi_turn_func_doc").mkdir()
    for rel in ("BFCL_v4_multi_turn_base.json", "possible_answer/BFCL_v4_multi_turn_base.json"):
        lines = (src / rel).read_text(encoding="utf-8").splitlines()
        (tmp_path / rel).write_text("\n".join(lines[5:7]) + "\n", encoding="utf-8")
    for doc in (src / "multi_turn_func_doc").iterdir():
        (tmp_path / "multi_turn_func_doc" / doc.name).write_text(doc.read_text(encoding="utf-8"), encoding="utf-8")
    items = bfcl.bfcl_items(CTX, size=10, categories="base", data=str(tmp_path))
    assert [i.label for i in items] == ["multi_turn_base_5", "multi_turn_base_6"]
    env = items[0].make_env()
    env.reset()
    for action in env.solution():
        _, reward, terminated, _, info = env.step(action)
    assert terminated and reward == 1.0 and info["official_valid"] is True
    incomplete = tmp_path / "incomplete"
    incomplete.mkdir()
    (incomplete / "BFCL_v4_multi_turn_base.json").write_text((tmp_path / "BFCL_v4_multi_turn_base.json").read_text())
    with pytest.raises(bfcl.BfclDataError, match="BFCL_v4_multi_turn_base.json not found in .*possible_answer"):
        bfcl.bfcl_items(CTX, categories="base", data=str(incomplete))


def test_the_ground_truth_scores_one_in_every_category_and_the_official_checker_agrees() -> None:
    items = list(bfcl.bfcl_items(CTX, size=2, seed=3))
    backend = ReplayBackend(recorded=recorded_replies(items, lambda env: env.solution()))
    result = evaluate(backend, items, suite="bfcl", concurrency=4)
    assert result.overall.n == 8 and result.overall.success_rate == 1.0 and result.overall.errors == 0
    assert list(result.groups) == sorted(f"multi_turn_{c}" for c in bfcl.CATEGORIES)
    assert all(g.n == 2 and g.success_ci[0] > 0.3 for g in result.groups.values())
    turns = {i.label: len(bfcl.get_entry(i.label).ground_truth) for i in items}
    assert all(e.turns == turns[e.label] for e in result.episodes)  # one message per turn


@pytest.mark.slow
@pytest.mark.parametrize("category", bfcl.CATEGORIES)
def test_every_entry_s_ground_truth_is_accepted_by_the_official_checker_through_the_harness(category: str) -> None:
    items = list(bfcl.bfcl_items(CTX, size=200, categories=category))
    result = evaluate(ReplayBackend(recorded=recorded_replies(items, lambda env: env.solution())), items,
                      suite="bfcl", concurrency=16)
    assert result.overall.n == 200 and result.overall.successes == 200 and result.overall.errors == 0


def test_calls_are_recorded_as_made_even_when_an_api_later_changes_their_arguments() -> None:
    """post_tweet keeps its mentions list and mention() extends it: the trajectory handed to
    the checker must hold the list as it was sent (these two entries failed before)."""
    items = list(bfcl.bfcl_items(CTX, ids="multi_turn_base_90,multi_turn_base_147"))
    result = evaluate(ReplayBackend(recorded=recorded_replies(items, lambda env: env.solution())), items)
    assert result.overall.success_rate == 1.0


def test_a_near_miss_gets_partial_return_and_no_success() -> None:
    """The last graded turn answered without its calls: the checker rejects the entry, the
    return is the share of graded turns passed before it."""
    items = list(bfcl.bfcl_items(CTX, ids="multi_turn_base_0,multi_turn_miss_param_1"))

    def all_but_last(env) -> list[str]:
        actions = env.solution()
        last = max(k for k, turn in enumerate(env.entry.ground_truth) if turn)
        actions[last] = "<answer>I am done.</answer>"
        return actions

    result = evaluate(ReplayBackend(recorded=recorded_replies(items, all_but_last)), items, concurrency=2)
    assert sorted(e.label for e in result.episodes) == sorted(i.label for i in items)
    for episode in result.episodes:
        graded = sum(1 for t in bfcl.get_entry(episode.label).ground_truth if t)
        assert not episode.success and episode.terminated
        assert episode.episode_return == pytest.approx((graded - 1) / graded)
    assert result.overall.success_rate == 0.0


def test_a_policy_that_never_calls_plays_every_turn_unless_told_to_stop() -> None:
    items = list(bfcl.bfcl_items(CTX, size=2, categories="base"))
    silent = ReplayBackend(rules=[(".", "<answer>Sorry, I cannot.</answer>")])
    result = evaluate(silent, items, concurrency=2)
    assert result.overall.success_rate == 0.0 and result.overall.mean_return == 0.0
    assert {e.label: e.turns for e in result.episodes} == {i.label: len(bfcl.get_entry(i.label).ground_truth) for i in items}
    stopping = list(bfcl.bfcl_items(CTX, size=2, categories="base", stop_on_failure="true"))
    result = evaluate(silent, stopping, concurrency=2)
    assert [e.turns for e in result.episodes] == [1, 1] and result.overall.success_rate == 0.0


def test_a_step_flood_is_force_terminated_and_rejected() -> None:
    item = bfcl.bfcl_items(CTX, ids="multi_turn_base_0")[0]
    env = item.make_env()
    env.reset()
    call = '<tool_call>{"name": "ls", "arguments": {}}</tool_call>'
    for _ in range(bfcl.STEP_LIMIT + 1):
        _, reward, terminated, _, info = env.step(call)
    assert terminated and info["force_terminated"] and info["official_valid"] is False and reward == 0.0


def test_only_plain_literal_calls_reach_the_official_checker() -> None:
    entry = bfcl.get_entry("multi_turn_base_0")
    kept = ToolCall("cd", {"folder": "document"})
    trajectory = [[[kept, ToolCall("open", {"file": "x", "mode": "w"}), ToolCall("cd", {"folder=1,x": "y"}),
                    ToolCall("cd", {"folder": float("nan")}), ToolCall("kill", {})],
                   [ToolCall("__import__", {"name": "os"})]]] + [[] for _ in entry.ground_truth[1:]]
    checked = bfcl.checkable(entry, trajectory)
    assert checked[0] == [[kept]] and all(turn == [] for turn in checked[1:])
    assert bfcl.official_verdict(entry, trajectory, tag="unsafe_calls") is False
    with pytest.raises(bfcl.BfclDataError, match="a trajectory of 1 turns"):
        bfcl.official_verdict(entry, trajectory[:1], tag="short")


@pytest.mark.model
@pytest.mark.slow
def test_spade_eval_of_the_embedded_model_on_a_bfcl_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPADE_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    # the entry with the shortest first observation (one API class, two turns), ended at its
    # first failed turn: one generation of a 2,000-token prompt on CPU
    r = CliRunner().invoke(build_app(), ["eval", "--suite", "bfcl", "-o", "ids=multi_turn_base_105",
                                         "-o", "stop_on_failure=true", "--max-new-tokens", "16",
                                         "--run", str(run), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout[r.stdout.index("{"):])
    assert out["suite"] == "bfcl" and out["overall"]["n"] == 1 and list(out["groups"]) == ["multi_turn_base"]
    assert out["snapshot"] == "embedded:SmolLM2-135M-Instruct" and out["overall"]["errors"] == 0
    assert out["episodes"][0]["label"] == "multi_turn_base_105" and out["episodes"][0]["terminated"]
    stored = [json.loads(line) for line in (run / "evals.jsonl").read_text().splitlines()]
    assert stored[0]["suite"] == "bfcl" and stored[0]["options"] == {"ids": "multi_turn_base_105", "stop_on_failure": True}
