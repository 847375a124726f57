"""The BFCL-v4 multi-turn suite: every entry served as an environment, graded like the
benchmark's own multi-turn checker."""

from __future__ import annotations

import json
import random

import pytest

pytest.importorskip("bfcl_eval")
pytest.importorskip("mpmath")

from spade_core.actions import ToolCall
from spade_core.env import ReferenceEnvAdapter
from spade_tooluse import bfcl


@pytest.fixture(scope="module")
def entries() -> list[bfcl.BfclEntry]:
    return bfcl.load_entries()


def test_the_suite_has_800_entries_in_four_categories(entries):
    assert len(entries) == 800
    counts: dict[str, int] = {}
    for e in entries:
        counts[e.category] = counts.get(e.category, 0) + 1
    assert counts == {f"multi_turn_{c}": 200 for c in bfcl.CATEGORIES}
    assert all(len(e.questions) == len(e.ground_truth) for e in entries)


def test_every_ground_truth_replay_scores_full_reward(entries):
    failures = []
    for entry in entries:
        env = bfcl.BfclEnv(entry)
        env.reset()
        reward, terminated, info = 0.0, False, {}
        for action in env.solution():
            _, reward, terminated, truncated, info = env.step(action)
            assert not truncated
        if not (terminated and reward == 1.0 and info["bfcl_valid"]):
            failures.append((entry.id, info.get("verdicts")))
    assert failures == []


def test_withheld_functions_are_hidden_until_the_reveal_turn(entries):
    entry = next(e for e in entries if e.missed_functions)
    (turn, names), = list(entry.missed_functions.items())[:1]
    env = bfcl.BfclEnv(entry)
    obs, _ = env.reset()
    visible = {s["function"]["name"] for s in env.get_tool_schemas()}
    assert not set(names) & visible
    assert all(f'"name": "{n}"' not in obs for n in names)
    actions = env.solution()
    for action in actions[:turn]:
        obs, *_ = env.step(action)
    assert bfcl.REVEAL_MESSAGE in obs
    assert set(names) <= {s["function"]["name"] for s in env.get_tool_schemas()}


def test_tool_schemas_are_openai_format(entries):
    for entry in entries[:50]:
        for schema in bfcl.BfclEnv(entry).get_tool_schemas():
            assert schema["type"] == "function"
            params = schema["function"]["parameters"]
            assert params["type"] == "object"
            blob = json.dumps(params)
            assert '"dict"' not in blob and '"float"' not in blob


def test_a_turn_without_calls_fails_when_the_answer_needs_calls(entries):
    entry = next(e for e in entries if e.ground_truth[0])
    env = bfcl.BfclEnv(entry)
    env.reset()
    _, reward, terminated, _, info = env.step("<answer>I will not do anything.</answer>")
    assert terminated and reward == 0.0
    assert info["bfcl_valid"] is False
    assert "no function call" in info["verdicts"][0]["reason"]


def test_malformed_and_unknown_calls_never_raise(entries):
    env = bfcl.BfclEnv(entries[0], stop_on_failure=False)
    env.reset()
    obs, *_ = env.step('<tool_call>{"name": "no_such_function", "arguments": {}}</tool_call>')
    assert "not defined" in obs
    obs, *_ = env.step('<tool_call>{"name": "cd", "arguments": {"nope": 1}}</tool_call>')
    assert "Error during execution" in obs
    obs, *_ = env.step("<tool_call>{not json</tool_call>")
    assert "Could not parse" in obs


def test_too_many_steps_in_one_turn_force_terminate(entries):
    entry = next(e for e in entries if "GorillaFileSystem" in e.involved_classes)
    env = bfcl.BfclEnv(entry)
    env.reset()
    for _ in range(bfcl.STEP_LIMIT):
        _, _, terminated, _, _ = env.step('<tool_call>{"name": "pwd", "arguments": {}}</tool_call>')
        assert not terminated
    _, reward, terminated, _, info = env.step('<tool_call>{"name": "pwd", "arguments": {}}</tool_call>')
    assert terminated and not info["bfcl_valid"] and reward < 1.0


def test_bfcl_env_passes_the_gymnasium_checker(entries):
    from gymnasium.utils.env_checker import check_env

    env = ReferenceEnvAdapter(bfcl.BfclEnv(entries[3]), max_turns=60)
    check_env(env, skip_render_check=True)


def test_positional_ground_truth_arguments_are_named_by_signature():
    entry = bfcl.get_entry("multi_turn_miss_func_0")
    assert "sort('final_report.pdf')" in entry.ground_truth[3]
    calls = [c for step in bfcl.ground_truth_trajectory(entry)[3] for c in step]
    assert calls == [ToolCall("sort", {"file_name": "final_report.pdf"})]


@pytest.mark.parametrize("kind", bfcl.MUTATIONS)
def test_mutated_trajectories_get_the_official_checkers_verdict(entries, kind):
    rng = random.Random(bfcl.MUTATIONS.index(kind))
    compared = disagreements = 0
    tag = 0
    while compared < 40:
        entry = rng.choice(entries)
        mutated = bfcl.mutate(bfcl.ground_truth_trajectory(entry), kind, rng)
        if mutated is None:
            continue
        ours = bfcl.score_trajectory(entry, mutated)["bfcl_valid"]
        theirs = bfcl.official_verdict(entry, mutated, tag=f"test_{kind}_{tag}")
        tag += 1
        compared += 1
        disagreements += ours != theirs
    assert disagreements == 0


def test_dropping_a_state_changing_call_is_caught(entries):
    entry = next(e for e in entries if any("mkdir(" in c for t in e.ground_truth for c in t))
    traj = bfcl.ground_truth_trajectory(entry)
    mutated = [[[c for c in step if c.name != "mkdir"] for step in turn] for turn in traj]
    result = bfcl.score_trajectory(entry, mutated)
    assert result["bfcl_valid"] is False
    assert result["bfcl_valid"] == bfcl.official_verdict(entry, mutated, tag="drop_mkdir")


def test_unknown_entry_and_category_are_clear_errors():
    with pytest.raises(bfcl.BfclDataError, match="no BFCL multi-turn entry"):
        bfcl.get_entry("multi_turn_base_99999")
    with pytest.raises(bfcl.BfclDataError, match="unknown BFCL multi-turn category"):
        bfcl.load_entries(["nope"])


def test_call_strings_round_trip_through_the_parser():
    c = ToolCall("mv", {"source": "a b.txt", "destination": "x'y", "n": 3, "f": 1.5, "flag": True, "xs": [1, "2"]})
    name, args, kwargs = bfcl.parse_call(bfcl.call_string(c))
    assert (name, args, kwargs) == (c.name, [], c.arguments)


def test_suite_report_figures_are_consistent():
    report = bfcl.run_suite(["miss_param"], mutations=12, seed=3)
    assert report.entries == 200 and report.replay_passed == 200 and report.replay_official_passed == 200
    assert report.mutated == 12 and report.agreement == 1.0


def test_protocol_constants_are_the_benchmarks_own():
    from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC, MAXIMUM_STEP_LIMIT
    from bfcl_eval.constants.executable_backend_config import STATELESS_CLASSES

    assert bfcl.STEP_LIMIT == MAXIMUM_STEP_LIMIT
    assert bfcl.REVEAL_MESSAGE == DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC
    assert set(STATELESS_CLASSES) == bfcl.STATELESS


def test_split_mutations_stay_within_the_step_limit(entries):
    rng = random.Random(0)
    for entry in entries[600:]:  # long-context entries have the longest turns
        mutated = bfcl.mutate(bfcl.ground_truth_trajectory(entry), "split_steps", rng)
        assert mutated is not None
        assert all(len(turn) <= bfcl.STEP_LIMIT for turn in mutated)


def _replaying_agent(entry: bfcl.BfclEntry):
    """An agent that knows the answer: plays the entry's solution, one message per turn."""
    actions = iter(bfcl.BfclEnv(entry).solution())
    return lambda chat: next(actions)


def test_an_agent_that_knows_the_answers_scores_full_accuracy():
    entries = [bfcl.get_entry(f"multi_turn_{c}_{i}") for c in bfcl.CATEGORIES for i in (0, 1)]
    results = [bfcl.play_entry(e, _replaying_agent(e)) for e in entries]
    assert all(r["valid"] and r["reward"] == 1.0 for r in results)


def test_a_silent_agent_scores_zero_and_the_chat_grows_as_a_conversation():
    seen: list[list[dict[str, str]]] = []

    def silent(chat):
        seen.append(chat)
        return "I cannot help with that."

    report = bfcl.evaluate_agent(silent, ["base"], limit=3)
    assert report.entries == 3 and report.valid == 0 and report.accuracy == 0.0
    assert report.per_category == {"multi_turn_base": [0, 3]}
    first = seen[0]
    assert [m["role"] for m in first] == ["user"] and "Functions (OpenAI format)" in first[0]["content"]


def test_the_plugin_suite_evaluates_an_agent_when_given_one():
    from spade_tooluse.plugin import tooluse_domain

    suite = tooluse_domain().eval_suites["bfcl_v4_multi_turn"]
    out = suite.run(agent=lambda chat: "<answer>no</answer>", categories=["miss_param"], limit=2)
    assert out["entries"] == 2 and out["accuracy"] == 0.0
    json.dumps(out)


def test_each_episode_starts_from_the_entrys_initial_state(entries):
    for entry in entries[::40]:
        env = bfcl.BfclEnv(entry, stop_on_failure=False)
        env.reset()
        for action in env.solution():
            env.step(action)
        env.reset()
        fresh = bfcl.ApiSet(entry)
        assert bfcl.state_differences(env._ep.agent, fresh) == {}, entry.id
        assert bfcl.state_differences(env._ep.truth, fresh) == {}, entry.id
