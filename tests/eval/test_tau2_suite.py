"""``spade eval --suite tau2_bench``: the tau2-bench adapter on tasks written here in the
benchmark's published format (a retail domain folder: tasks.json, db.json, policy.md).

Both models are the replay backend (the tests of this folder drive the OpenAI backend
through an HTTP transport double only for its error paths): the agent under test answers
from a script through the harness, the simulated user from another."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from spade_core.actions import ToolCall, format_tool_calls
from spade_core.app.cli import build_app
from spade_core.evaluation import SuiteContext
from spade_core.plugins import get_plugins
from spade_designer.llm.replay import ReplayBackend
from spade_eval.harness import evaluate
from spade_eval.suites import SuiteError
from typer.testing import CliRunner

from spade_eval import tau2

from .tau2_scripts import play_scripts, write_domain

CTX = SuiteContext(None, None)

DB = {
    "users": {
        "ana_lee_1001": {
            "user_id": "ana_lee_1001", "name": {"first_name": "Ana", "last_name": "Lee"},
            "address": {"address1": "1 Elm St", "address2": "", "city": "Springfield", "state": "IL",
                        "country": "USA", "zip": "62701"},
            "email": "ana.lee@example.com",
            "payment_methods": {
                "gift_card_5501": {"source": "gift_card", "id": "gift_card_5501", "balance": 20.0},
                "credit_card_7702": {"source": "credit_card", "id": "credit_card_7702", "brand": "visa",
                                     "last_four": "4242"}},
            "orders": ["#W1001", "#W1002"]}},
    "orders": {
        "#W1001": {"order_id": "#W1001", "user_id": "ana_lee_1001", "status": "pending",
                   "address": {"address1": "1 Elm St", "address2": "", "city": "Springfield", "state": "IL",
                               "country": "USA", "zip": "62701"},
                   "items": [{"name": "Desk Lamp", "product_id": "3000001", "item_id": "3100011", "price": 30.0,
                              "options": {"color": "red"}}],
                   "fulfillments": [],
                   "payment_history": [{"transaction_type": "payment", "amount": 30.0,
                                        "payment_method_id": "gift_card_5501"}]},
        "#W1002": {"order_id": "#W1002", "user_id": "ana_lee_1001", "status": "delivered",
                   "address": {"address1": "1 Elm St", "address2": "", "city": "Springfield", "state": "IL",
                               "country": "USA", "zip": "62701"},
                   "items": [{"name": "Desk Lamp", "product_id": "3000001", "item_id": "3100012", "price": 35.0,
                              "options": {"color": "blue"}},
                             {"name": "Mug", "product_id": "3000002", "item_id": "3200021", "price": 10.0,
                              "options": {"size": "large"}}],
                   "fulfillments": [{"tracking_id": ["TRK001"], "item_ids": ["3100012", "3200021"]}],
                   "payment_history": [{"transaction_type": "payment", "amount": 45.0,
                                        "payment_method_id": "credit_card_7702"}]}},
    "products": {
        "3000001": {"name": "Desk Lamp", "product_id": "3000001", "variants": {
            "3100011": {"item_id": "3100011", "options": {"color": "red"}, "available": True, "price": 30.0},
            "3100012": {"item_id": "3100012", "options": {"color": "blue"}, "available": True, "price": 35.0}}},
        "3000002": {"name": "Mug", "product_id": "3000002", "variants": {
            "3200021": {"item_id": "3200021", "options": {"size": "large"}, "available": True, "price": 10.0}}}},
}


def _task(task_id: str, reason: str, known: str, actions: list[dict], communicate: list[str],
          basis: list[str]) -> dict:
    return {
        "id": task_id,
        "description": {"purpose": "written for this adapter's tests", "relevant_policies": None, "notes": None},
        "user_scenario": {"persona": None, "instructions": {
            "domain": "retail", "reason_for_call": reason, "known_info": known, "unknown_info": None,
            "task_instructions": "Confirm when asked. End the conversation once it is done."}},
        "initial_state": None,
        "evaluation_criteria": {"actions": actions, "communicate_info": communicate, "nl_assertions": None,
                                "reward_basis": basis},
    }


TASKS = [
    _task("0", "You want to cancel your pending order #W1001; you no longer need it.",
          "You are Ana Lee, email ana.lee@example.com.",
          [{"action_id": "0_0", "name": "find_user_id_by_email", "arguments": {"email": "ana.lee@example.com"}},
           {"action_id": "0_1", "name": "get_order_details", "arguments": {"order_id": "#W1001"}},
           {"action_id": "0_2", "name": "cancel_pending_order",
            "arguments": {"order_id": "#W1001", "reason": "no longer needed"}}],
          ["50"], ["DB", "COMMUNICATE"]),
    _task("1", "You want to return the mug of your delivered order #W1002, refunded to your credit card.",
          "You are Ana Lee in zip code 62701.",
          [{"action_id": "1_0", "name": "find_user_id_by_name_zip",
            "arguments": {"first_name": "Ana", "last_name": "Lee", "zip": "62701"}},
           {"action_id": "1_1", "name": "return_delivered_order_items",
            "arguments": {"order_id": "#W1002", "item_ids": ["3200021"], "payment_method_id": "credit_card_7702"},
            "compare_args": ["order_id", "item_ids"]}],
          [], ["DB", "ACTION"]),
]


def call(name: str, **arguments) -> str:
    return format_tool_calls([ToolCall(name, arguments)])


#: Per task: the agent's messages and the user's (the first answers the agent's greeting).
PERFECT = {
    "0": ([call("find_user_id_by_email", email="ana.lee@example.com"),
           call("get_order_details", order_id="#W1001"),
           "Order #W1001 (Desk Lamp, 30.00) can be cancelled as no longer needed. Shall I go ahead (yes/no)?",
           call("cancel_pending_order", order_id="#W1001", reason="no longer needed"),
           "Done: order #W1001 is cancelled and 30.00 went back to your gift card, whose balance is now 50.0."],
          ["Hi, please cancel my order #W1001, I no longer need it. My email is ana.lee@example.com.",
           "yes", "Thanks! ###STOP###"]),
    "1": ([call("find_user_id_by_name_zip", first_name="Ana", last_name="Lee", zip="62701"),
           call("get_order_details", order_id="#W1002"),
           "I can return the Mug (10.00) of #W1002 to your visa card ending 4242. Confirm (yes/no)?",
           call("return_delivered_order_items", order_id="#W1002", item_ids=["3200021"],
                payment_method_id="credit_card_7702"),
           "The return is requested; you will get an email with the instructions."],
          ["Hello, I'm Ana Lee, zip 62701. I want to return the mug from order #W1002 to my credit card.",
           "yes", "Great, thank you. ###STOP###"]),
}


@pytest.fixture
def domains(tmp_path: Path) -> Path:
    return write_domain(tmp_path / "domains", "retail", TASKS, DB, "# Retail agent policy\nAuthenticate the user "
                        "first; confirm every change (yes/no) before making it.\n")


def play(domains: Path, scripts: dict[str, tuple[list[str], list[str]]], *, size: int = 1, **options):
    """:func:`.tau2_scripts.play_scripts`: (result, agent backend, user backend)."""
    result, agent, user, _ = play_scripts(domains, scripts, size=size, **options)
    return result, agent, user


def test_the_suite_is_registered_and_listed_by_spade_eval(tmp_path: Path, domains: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    suite = get_plugins().eval_suites()["tau2_bench"]
    assert suite is tau2.SUITE and suite.trusted
    assert set(suite.options) == {"data", "domains", "ids", "split", "user", "judge"}
    monkeypatch.setenv("SPADE_HOME", str(tmp_path / "home"))
    r = CliRunner().invoke(build_app(), ["eval", "--list"])
    assert r.exit_code == 0, r.output
    assert "tau2_bench" in r.output and "acebench_agent" in r.output
    r = CliRunner().invoke(build_app(), ["eval", "--suite", "tau2_bench", "-o", f"data={domains}"])
    assert r.exit_code != 0 and "user=openai:BASE_URL#MODEL" in " ".join(r.output.split()), r.output


def test_a_perfect_agent_scores_one_on_every_trial(domains: Path) -> None:
    result, agent, user = play(domains, PERFECT, size=2)
    assert [e.label for e in result.episodes] == ["retail/0", "retail/0", "retail/1", "retail/1"]
    assert all(e.success and e.error is None for e in result.episodes), result.episodes
    assert result.columns["tau2-retail"].success_rate == 1.0 and result.columns["tau2-retail"].tasks == 2
    assert tau2.pass_hat_ks(result.episodes) == {"retail": {1: 1.0, 2: 1.0}}
    # the user model saw the scenario and the agent's words, never its tool calls
    system = user.calls[0][0]["content"]
    assert "###STOP###" in system and "cancel your pending order #W1001" in system
    assert all("<tool_call>" not in m["content"] for conv in user.calls for m in conv)
    # the agent saw the policy, the tools and the user's first message
    first = agent.calls[0][1]["content"]
    assert "Retail agent policy" in first and "cancel_pending_order" in first and "ana.lee@example.com" in first


def test_a_wrong_tool_call_or_a_missing_fact_scores_zero(domains: Path) -> None:
    wrong_reason = dict(PERFECT)
    agent, said = PERFECT["0"]
    wrong_reason["0"] = ([*agent[:3], call("cancel_pending_order", order_id="#W1001", reason="ordered by mistake"),
                          agent[4]], said)
    result, _, _ = play(domains, wrong_reason, ids="0")
    assert [e.episode_return for e in result.episodes] == [0.0]  # the database differs (cancel_reason)
    silent = {"0": ([*agent[:4], "Done, your order is cancelled."], said)}
    result, _, _ = play(domains, silent, ids="0")
    assert [e.episode_return for e in result.episodes] == [0.0]  # "50" never communicated
    agent1, said1 = PERFECT["1"]
    other_card = {"1": ([*agent1[:3], call("return_delivered_order_items", order_id="#W1002", item_ids=["3200021"],
                                           payment_method_id="gift_card_5501"), agent1[4]], said1)}
    result, _, _ = play(domains, other_card, ids="1")
    assert [e.episode_return for e in result.episodes] == [0.0]  # DB: another refund method
    assert result.episodes[0].terminated and result.episodes[0].error is None


def test_the_score_is_the_product_of_the_reward_basis(domains: Path) -> None:
    task = tau2.load_domain(domains / "retail")[1]
    env = tau2.Tau2Env(task, DB, "", ReplayBackend(["hi"]))
    env.reset()
    env.step(call("return_delivered_order_items", order_id="#W1002", item_ids=["3200021"],
                  payment_method_id="credit_card_7702"))
    reward, parts = env.score()
    # the ACTION check ignores payment_method_id (compare_args), DB does not; the name-zip
    # lookup was never called, so ACTION fails
    assert parts == {"DB": 1.0, "ACTION": 0.0} and reward == 0.0


def test_an_nl_assertion_component_without_assertions_scores_one_and_needs_no_judge(domains: Path) -> None:
    # the benchmark's NL evaluator gives 1 when the task lists no nl_assertions (null or []);
    # only a task that lists some needs the LLM judge (tests/eval/test_tau2_judge.py)
    for listed in (None, []):
        task = copy.deepcopy(TASKS[1])
        task["evaluation_criteria"]["reward_basis"] = ["DB", "NL_ASSERTION"]
        task["evaluation_criteria"]["nl_assertions"] = listed
        loaded = tau2.parse_task(task, domain="retail", path=domains / "retail" / "tasks.json", index=0)
        tau2.check_supported(loaded)
        env = tau2.Tau2Env(loaded, DB, "", ReplayBackend(["hi"]))
        env.reset()
        env.step(call("return_delivered_order_items", order_id="#W1002", item_ids=["3200021"],
                      payment_method_id="credit_card_7702"))
        assert env.score() == (1.0, {"DB": 1.0, "NL_ASSERTION": 1.0})
    task["evaluation_criteria"]["nl_assertions"] = ["The agent confirms the refund method before the return."]
    loaded = tau2.parse_task(task, domain="retail", path=domains / "retail" / "tasks.json", index=0)
    tau2.check_supported(loaded)  # supported, but its judge must be reachable: the replay backend is not
    with pytest.raises(tau2.JudgeUnavailable, match="-o judge=openai:BASE_URL#MODEL"):
        tau2.Tau2Env(loaded, DB, "", ReplayBackend(["hi"]))


def test_pass_hat_k_arithmetic() -> None:
    assert tau2.pass_hat_k(4, 4, 4) == 1.0 and tau2.pass_hat_k(4, 3, 4) == 0.0
    assert tau2.pass_hat_k(4, 2, 2) == pytest.approx(1 / 6) and tau2.pass_hat_k(4, 3, 1) == 0.75
    with pytest.raises(ValueError):
        tau2.pass_hat_k(2, 1, 3)

    def ep(group: str, success: bool, error: str | None = None, turns: int = 3) -> SimpleNamespace:
        return SimpleNamespace(group=group, success=success, error=error, turns=turns)

    eps = [ep("retail/a", True), ep("retail/a", True), ep("retail/b", True), ep("retail/b", False),
           ep("airline/x", False, "NotImplementedInAdapter: ...", 0)]
    assert tau2.pass_hat_ks(eps) == {"retail": {1: 0.75, 2: 0.5}}


def test_a_malformed_task_file_names_the_file_and_the_field(tmp_path: Path) -> None:
    folder = tmp_path / "retail"
    folder.mkdir()
    bad = json.loads(json.dumps(TASKS))
    del bad[1]["evaluation_criteria"]["actions"][1]["arguments"]
    (folder / "tasks.json").write_text(json.dumps(bad))
    with pytest.raises(tau2.Tau2DataError, match=r"retail/tasks\.json: task '1': field "
                                                 r"evaluation_criteria\.actions\[1\]\.arguments: must be an object"):
        tau2.tau2_items(CTX, data=str(folder), user=ReplayBackend())
    (folder / "tasks.json").write_text(json.dumps({"tasks": TASKS}))
    with pytest.raises(tau2.Tau2DataError, match="must hold a list of tasks"):
        tau2.tau2_items(CTX, data=str(folder), user=ReplayBackend())
    with pytest.raises(SuiteError, match="-o user=openai:BASE_URL#MODEL"):
        tau2.tau2_items(CTX, data=str(folder))


def test_what_is_not_implemented_is_reported_by_name(domains: Path) -> None:
    (domains / "banking").mkdir()  # a domain whose tools are not here
    line = _task("7", "You want your balance.", "You are Bo Chen.",
                 [{"action_id": "7_0", "name": "get_balance", "arguments": {"account_id": "A100"}}],
                 [], ["DB", "COMMUNICATE"])
    (domains / "banking" / "tasks.json").write_text(json.dumps([line]))
    judged = _task("2", "You want to know what a mug costs.", "You are Ana Lee.", [], ["10"], ["DB", "NL_ASSERTION"])
    judged["evaluation_criteria"]["nl_assertions"] = ["The agent says the mug costs 10 dollars."]
    # a tool the adapter lacks (every published retail tool is here; a later version may add one)
    newer = _task("3", "You want your gift card's balance.", "You are Ana Lee.",
                  [{"action_id": "3_0", "name": "get_gift_card_balance",
                    "arguments": {"payment_method_id": "gift_card_5501"}}], [], ["DB"])
    (domains / "retail" / "tasks.json").write_text(json.dumps([judged, newer]))
    items = tau2.tau2_items(CTX, data=str(domains), user=ReplayBackend())
    result = evaluate(ReplayBackend(), items, suite="tau2_bench", concurrency=1)
    errors = {e.label: e.error for e in result.episodes}
    assert "tau2 domain 'banking'" in errors["banking/7"] and "implemented: retail, airline, telecom" in \
        errors["banking/7"]
    assert errors["retail/2"].startswith("JudgeUnavailable: tau2 task retail/2: NL assertions are scored by a "
                                         "judge model")
    assert "tool get_gift_card_balance is not implemented" in errors["retail/3"]
    assert result.columns["tau2-banking"].unavailable == ["banking/7"]
    assert result.columns["tau2-retail"].unavailable == ["retail/2", "retail/3"]


def test_table_2_reads_the_tau2_and_acebench_columns() -> None:
    from spade_eval.paper import paper_table, run_scores

    def record(suite: str, columns: dict[str, float]) -> dict:
        return {"suite": suite, "snapshot": "openai:http://x/v1#Qwen3-4B",
                "columns": {c: {"success_rate": v} for c, v in columns.items()}, "groups": {}}

    evals = [record("tau2_bench", {"tau2-retail": 0.5}),
             record("acebench_agent", {"ACE-multi-step": 0.6, "ACE-multi-turn": 0.4})]
    assert run_scores(evals) == {"tau2-retail": 50.0, "ACE-multi-step": 60.0, "ACE-multi-turn": 40.0}
    table = paper_table([("ours", evals)], table="table2_tooluse")
    assert table.header[-1] == "overall" and "tau2-retail" in table.header and "ACE-multi-turn" in table.header
    ours = table.rows[-1]
    # overall: the mean of the benchmarks' averages (tau2 50, ACE 50), not of the columns
    assert ours[table.header.index("tau2-retail")] == "50.0" and ours[-1] == "50.0 (of 3)"
    # airline and telecom are measurable now: only "not run" (by this record), not "not measurable here"
    assert any("tau2-airline (spade eval --suite tau2_bench)" in n and "tau2-telecom (spade eval --suite tau2_bench)"
               in n for n in table.notes)
    assert not any("not measurable" in n for n in table.notes)
