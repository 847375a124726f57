"""``spade eval --suite acebench_agent``: the ACEBench agent-category adapter on entries
written here in the benchmark's published format (JSON lines, ``possible_answer/``).

The agent under test and the simulated user are the replay backend, as in the other suites'
tests here: the agent answers from a script through the harness, the user from another."""

from __future__ import annotations

from pathlib import Path

import pytest
from spade_core.actions import ToolCall, format_tool_calls
from spade_core.evaluation import SuiteContext
from spade_core.plugins import get_plugins
from spade_designer.llm.replay import ReplayBackend
from spade_eval.harness import evaluate

from spade_eval import acebench, acebench_apis, acebench_entries

from .acebench_files import write_agent_data
from .acebench_files import write_rows as write

CTX = SuiteContext(None, None)


def fn(name: str, summary: str, **params: str) -> dict:
    return {"name": name, "description": summary,
            "parameters": {"type": "dict", "required": list(params),
                           "properties": {k: {"type": v, "description": k} for k, v in params.items()}}}


FUNCTIONS = [fn("turn_on_wifi", "Turn on WiFi."), fn("login_device", "Log in to the device."),
             fn("send_message", "Send a message.", sender_name="string", receiver_name="string", message="string"),
             fn("delete_message", "Delete a message by id.", message_id="integer"),
             fn("add_reminder", "Add a reminder.", title="string", description="string", time="string")]
#: The benchmark's built-in inbox and reminders (every entry starts from them).
INBOX = acebench_apis.default_state("MessageApi")["inbox"]
REMINDERS = acebench_apis.default_state("ReminderApi")["reminder_list"]

STEP = {"id": "agent_multi_step_0",
        "question": "I am Eve. Add a reminder titled 'Dentist' (description 'Dentist at noon', time 2024-07-20 "
                    "12:00), then tell Frank 'See you at noon' by message; if the inbox is full, delete the "
                    "oldest message first.",
        "initial_config": {"BaseApi": {"wifi": False, "logged_in": True}},
        "path": [], "function": FUNCTIONS, "involved_classes": ["BaseApi", "MessageApi", "ReminderApi"]}
STEP_ANSWER = {"id": "agent_multi_step_0", "ground_truth": [
    {"BaseApi": {"wifi": True, "logged_in": True}},
    {"MessageApi": {"inbox": {**{k: v for k, v in INBOX.items() if k != "3"},
                              "7": {"sender_id": "USR100", "receiver_id": "USR101", "message": "See you at noon"}}}},
    {"ReminderApi": {"reminder_list": {**REMINDERS, "4": {"reminder_id": 4, "title": "Dentist",
                                                          "description": "Dentist at noon",
                                                          "time": "2024-07-20 12:00", "notified": False}}}}],
    "mile_stone": ["[turn_on_wifi()]",
                   "[add_reminder(title='Dentist', description='Dentist at noon', time='2024-07-20 12:00')]",
                   "[delete_message(message_id=3)]",
                   "[send_message(sender_name='Eve', receiver_name='Frank', message='See you at noon')] "]}
TURN = {"id": "agent_multi_turn_0",
        "question": "You are Eve. You want a reminder 'Pay rent' with the description 'Rent of May' at "
                    "2024-05-01 09:00.",
        "initial_config": {"BaseApi": {"wifi": True, "logged_in": False}},
        "path": [], "function": FUNCTIONS, "involved_classes": ["BaseApi", "ReminderApi"]}
TURN_ANSWER = {"id": "agent_multi_turn_0", "ground_truth": [
    {"BaseApi": {"wifi": True, "logged_in": True}},
    {"ReminderApi": {"reminder_list": {**REMINDERS, "4": {"reminder_id": 4, "title": "Pay rent",
                                                          "description": "Rent of May", "time": "2024-05-01 09:00",
                                                          "notified": False}}}}],
    "mile_stone": [["[login_device()]", "[add_reminder(title='Pay rent', description='Rent of May', "
                                        "time='2024-05-01 09:00')]"],
                   ["[add_reminder(title='Pay rent', description='Rent of May', time='2024-05-01 09:00')]"]]}


def call(name: str, **arguments) -> str:
    return format_tool_calls([ToolCall(name, arguments)])


STEP_PERFECT = [call("turn_on_wifi"),
                call("add_reminder", title="Dentist", description="Dentist at noon", time="2024-07-20 12:00"),
                call("delete_message", message_id=3),
                call("send_message", sender_name="Eve", receiver_name="Frank", message="See you at noon"),
                "Done: the reminder is set and Frank has your message."]
TURN_PERFECT = [call("login_device"),
                call("add_reminder", title="Pay rent", description="Rent of May", time="2024-05-01 09:00"),
                "The reminder 'Pay rent' is set for 2024-05-01 09:00. Anything else?"]
TURN_USER = ["Please add a reminder 'Pay rent', description 'Rent of May', at 2024-05-01 09:00.",
             "finish conversation"]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_agent_data(tmp_path / "data_en", [STEP], [TURN], [STEP_ANSWER], [TURN_ANSWER])


def play(data: Path, step: list[str], turn: list[str], user: list[str], **options):
    user_backend = ReplayBackend(user, name="user")
    items = acebench.acebench_items(CTX, data=str(data), user=user_backend, **options)
    agent = ReplayBackend([*step, *turn], name="agent")
    return evaluate(agent, items, suite="acebench_agent", concurrency=1), agent, user_backend


def test_the_suite_is_registered() -> None:
    suite = get_plugins().eval_suites()["acebench_agent"]
    assert suite is acebench.SUITE and suite.trusted
    assert set(suite.options) == {"data", "categories", "ids", "user"}


def test_a_perfect_agent_reaches_both_end_states(data: Path) -> None:
    result, agent, user = play(data, STEP_PERFECT, TURN_PERFECT, TURN_USER)
    assert [(e.label, e.episode_return, e.success) for e in result.episodes] == [
        ("agent_multi_step_0", 1.0, True), ("agent_multi_turn_0", 1.0, True)]
    assert result.columns["ACE-multi-step"].success_rate == 1.0
    assert result.columns["ACE-multi-turn"].success_rate == 1.0
    assert "Dentist at noon" in agent.calls[0][1]["content"] and "add_reminder" in agent.calls[0][1]["content"]
    assert "Instruction: You are Eve." in user.calls[0][0]["content"]


def test_a_wrong_end_state_scores_zero_with_its_process_accuracy(data: Path) -> None:
    # the message is never sent: 3 of 4 milestones, end state wrong
    forgot = [*STEP_PERFECT[:3], "Done."]
    result, _, _ = play(data, forgot, TURN_PERFECT, TURN_USER)
    step = result.episodes[0]
    assert not step.success and step.episode_return == pytest.approx(0.75)
    # every milestone reached, then Frank's earlier message deleted: the end state is wrong
    extra = [*STEP_PERFECT[:4], call("delete_message", message_id=1), "Done."]
    result, _, _ = play(data, extra, TURN_PERFECT, TURN_USER)
    assert result.episodes[0].episode_return == acebench.NEAR_MISS and not result.episodes[0].success
    assert result.groups["agent_multi_step"].successes == 0
    # multi-turn: a wrong title; the login milestone is met (1 of 2), the other list 0 of 1
    wrong = [call("login_device"), call("add_reminder", title="Rent", description="Rent of May",
                                         time="2024-05-01 09:00"), "Set. Anything else?"]
    result, _, _ = play(data, STEP_PERFECT, wrong, TURN_USER)
    assert [e.episode_return for e in result.episodes] == [1.0, 0.5]


def test_the_benchmark_s_checks_directly() -> None:
    assert acebench.render_calls([ToolCall("add_food_delivery_order", {
        "username": "Eve", "merchant_name": "Domino's", "items": [{"product": "Pizza", "quantity": 1}]})]) == (
        "[add_food_delivery_order(username='Eve', merchant_name='Domino's', items=[{'product': 'Pizza', "
        "'quantity': 1}])]")
    # the benchmark's greedy in-order search: finding "a" at place 2 consumes "b" before it, and
    # the search for "b" then runs off the end, so "c" is not looked for where it is
    assert acebench_entries.milestone_accuracy(["[a()]", "[b()]", "[c()]"], ["[b()]", "[a()]", "[c()]"]) == pytest.approx(1 / 3)
    assert acebench_entries.milestone_accuracy(["[a()]", "[c()]"], ["[b()]", "[a()]", "[c()] "]) == 1.0
    assert acebench.process_accuracy([["[a()]", "[b()]"], ["[b()]"]], ["[b()]"]) == 1.0
    truth = [{"BaseApi": {"wifi": True, "logged_in": True}}]
    assert acebench.end_state_errors(truth, [{"BaseApi": {"wifi": True, "logged_in": True}}]) == []
    assert acebench.end_state_errors(truth, [{"BaseApi": {"wifi": False, "logged_in": True}}])
    assert "wrong number of classes" in acebench.end_state_errors(truth, [])[0]
    # an answer class is compared with ours of exactly its name: the files' "ReminderAPI"
    # matches none, so it is not compared (as in the benchmark), but it counts
    reminders = {"ReminderApi": {"reminder_list": {"1": {"title": "mine"}}}}
    assert acebench.end_state_errors([{"ReminderAPI": {"reminder_list": {"1": {"title": "theirs"}}}}], [reminders]) == []
    assert acebench.end_state_errors([{"ReminderApi": {"reminder_list": {"1": {"title": "theirs"}}}}], [reminders])
    assert "wrong number of classes" in acebench.end_state_errors([*truth, {"ReminderAPI": {}}], [reminders])[0]


def test_a_malformed_file_names_the_file_and_the_field(data: Path) -> None:
    bad = {k: v for k, v in STEP.items() if k != "involved_classes"}
    write(data, "data_agent_multi_step.json", [bad])
    with pytest.raises(acebench.AceDataError, match=r"data_agent_multi_step\.json: entry 1 \(id "
                                                    r"'agent_multi_step_0'\): field involved_classes"):
        acebench.acebench_items(CTX, data=str(data), categories="multi_step")
    write(data, "data_agent_multi_step.json", [STEP])
    write(data / "possible_answer", "data_agent_multi_step.json", [{**STEP_ANSWER, "id": "other"}])
    with pytest.raises(acebench.AceDataError, match=r"possible_answer/data_agent_multi_step\.json: no answer for "
                                                    r"agent_multi_step_0"):
        acebench.acebench_items(CTX, data=str(data), categories="multi_step")
    (data / "data_agent_multi_step.json").write_text("{not json\n")
    with pytest.raises(acebench.AceDataError, match=r"data_agent_multi_step\.json: line 1 is not JSON"):
        acebench.acebench_items(CTX, data=str(data), categories="multi_step")


def test_what_is_not_implemented_is_reported_by_name(data: Path) -> None:
    with pytest.raises(acebench.AceDataError, match="category normal_atom_bool is not implemented"):
        acebench.acebench_items(CTX, data=str(data), categories="normal_atom_bool")
    finance = {**STEP, "id": "agent_multi_step_1", "involved_classes": ["BaseApi", "Finance"]}
    write(data, "data_agent_multi_step.json", [STEP, finance])
    write(data / "possible_answer", "data_agent_multi_step.json", [STEP_ANSWER, {**STEP_ANSWER, "id": finance["id"]}])
    items = acebench.acebench_items(CTX, data=str(data), categories="multi_step")
    result = evaluate(ReplayBackend(STEP_PERFECT), items, concurrency=1)
    errors = {e.label: e.error for e in result.episodes}
    assert errors["agent_multi_step_0"] is None
    assert "class Finance is not implemented" in errors["agent_multi_step_1"]
    assert "implemented: BaseApi, MessageApi, ReminderApi, FoodPlatform, Travel" in errors["agent_multi_step_1"]
