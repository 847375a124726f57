"""The ``NL_ASSERTION`` component: the judge is asked about exactly the task's assertions
over the conversation, its reply read into one verdict per assertion (1 only when all are
met), and a reply that cannot be read recorded as its episode's error. Readings of fixed
replies; the error paths through an HTTP double of the endpoint; the real path once
against the embedded model behind ``transformers serve``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from spade_core.actions import ToolCall, format_tool_calls
from spade_core.evaluation import SuiteContext
from spade_core.plugins import get_plugins
from spade_designer.llm.openai_backend import OpenAIBackend
from spade_designer.llm.replay import ReplayBackend
from spade_eval.harness import evaluate

from spade_eval import tau2

from .tau2_scripts import ScriptedEndpoint, write_domain

MUG = {"name": "Mug", "product_id": "3000002", "variants": {
    "3200021": {"item_id": "3200021", "options": {"size": "large"}, "available": True, "price": 10.0}}}
DB = {"users": {}, "orders": {}, "products": {"3000002": MUG}}
SAID = "The agent tells the customer that the large mug costs 10 dollars."
OFFERED = "The agent offers the customer a discount."
TASK = {
    "id": "mug",
    "user_scenario": {"instructions": "You want to know what the large mug (product 3000002) costs."},
    "initial_state": None,
    "evaluation_criteria": {"actions": [], "communicate_info": [], "nl_assertions": [SAID, OFFERED],
                            "reward_basis": ["NL_ASSERTION"]},
}
AGENT = [format_tool_calls([ToolCall("get_product_details", {"product_id": "3000002"})]),
         "The large mug costs 10 dollars."]
USER = ["What does the large mug cost?", "Thanks! ###STOP###"]
TRANSCRIPT = [("assistant", "Hi! How can I help you today?"), ("user", USER[0]),
              ("tool", json.dumps(MUG, ensure_ascii=False)), ("assistant", AGENT[1]), ("user", USER[1])]


def reply(*verdicts: tuple[str, bool]) -> str:
    return json.dumps({"results": [{"expectedOutcome": a, "reasoning": "as said", "metExpectation": met}
                                   for a, met in verdicts]})


@pytest.fixture
def domains(tmp_path: Path) -> Path:
    return write_domain(tmp_path / "domains", "retail", [TASK], DB, "# Retail agent policy\n")


def play(domains: Path, judge: object, *, size: int = 1):
    """The task played ``size`` times through the harness (agent and user scripted), judged
    by ``judge`` (``-o judge=``); the harness's result."""
    items = tau2.tau2_items(SuiteContext(None, get_plugins()), size=size, data=str(domains),
                            user=ReplayBackend(USER * size, name="user"), judge=judge)
    return evaluate(ReplayBackend(AGENT * size, name="agent"), items, suite="tau2_bench", size=size, concurrency=1)


# -- the request ----------------------------------------------------------------------------------


def test_the_judge_is_given_the_conversation_and_exactly_the_assertions() -> None:
    system, user = tau2.NLJudge.messages(TRANSCRIPT, [SAID, OFFERED])
    assert system["role"] == "system" and '"metExpectation"' in system["content"]
    conversation, outcomes = user["content"].split("\n\nExpected outcomes:\n")
    assert conversation.splitlines()[1:] == [f"{role}: {text}" for role, text in TRANSCRIPT]
    assert outcomes.splitlines() == [f"1. {SAID}", f"2. {OFFERED}"]


# -- reading the reply ----------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "met"), [
    (reply((SAID, True), (OFFERED, True)), [True, True]),
    (reply((SAID, True), (OFFERED, False)), [True, False]),
    (reply((OFFERED, False), (SAID, True)), [True, False]),  # matched by text, not position
    (f"```json\n{reply((SAID, True), (OFFERED, True))}\n```", [True, True]),  # one code fence around it
    (reply((f"  {SAID.upper()} ", False), (OFFERED.replace(" ", "  "), True)), [False, True]),
])
def test_a_readable_reply_gives_one_verdict_per_assertion(text: str, met: list[bool]) -> None:
    verdicts = tau2.read_verdicts(text, [SAID, OFFERED])
    assert [(v.assertion, v.met) for v in verdicts] == list(zip([SAID, OFFERED], met, strict=True))
    assert tau2.judge.all_met(verdicts) == float(all(met))


@pytest.mark.parametrize(("text", "problem"), [
    ("Both outcomes are met.", "not JSON (Expecting value at character 0)"),
    (reply((SAID, True))[:-2], "not JSON"),
    (json.dumps([{"expectedOutcome": SAID, "metExpectation": True}]), 'not an object with a "results" list'),
    (json.dumps({"verdicts": []}), 'not an object with a "results" list'),
    (json.dumps({"results": [{"reasoning": "ok", "metExpectation": True}]}), 'results[0] has no "expectedOutcome" text'),
    (json.dumps({"results": [{"expectedOutcome": SAID, "metExpectation": "true"}]}),
     "results[0] has no boolean \"metExpectation\" (got 'true')"),
    (json.dumps({"results": []}), f"no verdict on the assertion {SAID!r}"),
    (reply((SAID, True)), f"no verdict on the assertion {OFFERED!r}"),
    (reply((SAID, True), (OFFERED, True), ("The agent is polite.", True)),
     "a verdict on an outcome that was not asked: 'The agent is polite.'"),
    (reply((SAID, True), (SAID, True)), f"no verdict on the assertion {OFFERED!r}"),
])
def test_an_unreadable_reply_is_an_error_naming_the_problem(text: str, problem: str) -> None:
    with pytest.raises(tau2.JudgeReplyError) as raised:
        tau2.read_verdicts(text, [SAID, OFFERED])
    message = str(raised.value)
    assert message.startswith(f"the NL-assertion judge's reply cannot be read: {problem}"), message
    assert "(reply: '" in message


def test_an_assertion_listed_twice_needs_two_verdicts() -> None:
    assert [v.met for v in tau2.read_verdicts(reply((SAID, True), (SAID, False)), [SAID, SAID])] == [True, False]
    with pytest.raises(tau2.JudgeReplyError, match=f"no second verdict on the assertion {SAID!r}"):
        tau2.read_verdicts(reply((SAID, True)), [SAID, SAID])


# -- through the suite ----------------------------------------------------------------------------


def test_an_unreadable_reply_is_recorded_as_its_episodes_error(domains: Path) -> None:
    endpoint = ScriptedEndpoint(["Both are met.", {"id": "x", "choices": []}])
    result = play(domains, endpoint.backend("judge"), size=2)
    first, second = result.episodes
    assert first.error == ("JudgeReplyError: the NL-assertion judge's reply cannot be read: not JSON (Expecting "
                           "value at character 0) (reply: 'Both are met.')")
    assert second.error.startswith("JudgeReplyError: the NL-assertion judge's answer has no "
                                   "choices[0].message.content: ")
    # played to the end, then not scored: no success, counted as an error, the task not "unavailable"
    assert all(e.turns > 0 and not e.success and e.episode_return == 0.0 for e in result.episodes)
    column = result.columns["tau2-retail"]
    assert column.unavailable == [] and result.overall.errors == 2
    # the judge was asked once per episode, at its end, about the task's two assertions
    assert len(endpoint.requests) == 2 and all(r["model"] == "judge" and r["temperature"] == 0.0
                                               for r in endpoint.requests)
    assert endpoint.requests[0]["messages"][1]["content"].endswith(f"Expected outcomes:\n1. {SAID}\n2. {OFFERED}")


def test_the_judge_is_the_users_model_unless_given(domains: Path) -> None:
    ctx = SuiteContext(None, get_plugins())
    user = "openai:http://127.0.0.1:9/v1#user-model"
    env = tau2.tau2_items(ctx, data=str(domains), user=user)[0].make_env()
    assert isinstance(env.judge.backend, OpenAIBackend) and env.judge.backend is env.user_backend
    env = tau2.tau2_items(ctx, data=str(domains), user=user, judge="openai:http://127.0.0.1:9/v2#judge-model")[0] \
        .make_env()
    judge = env.judge.backend
    assert (judge.base_url, judge.model_name) == ("http://127.0.0.1:9/v2", "judge-model") and judge is not \
        env.user_backend
    with pytest.raises(tau2.JudgeUnavailable, match="-o judge= takes openai:BASE_URL#MODEL, got 'embedded'"):
        tau2.tau2_items(ctx, data=str(domains), user=user, judge="embedded")


# -- the real path --------------------------------------------------------------------------------


class RecordingBackend(OpenAIBackend):
    """The ``openai`` backend, keeping each request body and the server's answer."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.exchanges: list[tuple[dict, dict]] = []

    def chat_completion(self, body: dict) -> dict:
        answer = super().chat_completion(body)
        self.exchanges.append((body, answer))
        return answer


@pytest.fixture(scope="module")
def served(model_server: tuple[str, str]) -> tuple[str, str]:
    base, model = model_server
    return base + "/v1", model


@pytest.mark.model
@pytest.mark.slow
def test_the_real_judge_scores_what_it_said(domains: Path, served: tuple[str, str]) -> None:
    url, model = served
    backend = RecordingBackend(url, model)
    result = play(domains, backend)
    (episode,) = result.episodes
    (body, answer), = backend.exchanges
    assert body["model"] == model
    assert body["messages"] == tau2.NLJudge.messages(TRANSCRIPT, [SAID, OFFERED])
    said = answer["choices"][0]["message"]["content"]
    try:
        verdicts = tau2.read_verdicts(said, [SAID, OFFERED])
    except tau2.JudgeReplyError as exc:  # what the small model usually writes: prose
        assert episode.error == f"JudgeReplyError: {exc}"[:500] and episode.episode_return == 0.0
    else:  # a readable reply: the score is its verdict
        assert episode.error is None and episode.episode_return == float(all(v.met for v in verdicts))
