"""The ToolEnv contract: declarations are checked, actions never crash the env, turns
advance in both modes, and grading compares the state reached with the replayed answer."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spade_core.errors import SpadeError
from spade_tooluse.base import ToolEnv, ToolEnvError, ToolError, ToolSchemaError, Turn, call, function_schema

COUNTER_TOOLS = [
    function_schema("add", "Add to a named counter.", {"name": {"type": "string"}, "amount": {"type": "integer"}}, ["name"]),
    function_schema("get", "Read a counter.", {"name": {"type": "string"}}, ["name"]),
]


class CounterEnv(ToolEnv):
    """Two counters; request 1 adds, request 2 asks for a value."""

    tools = COUNTER_TOOLS
    advance_on = "reply"

    def build(self):
        start = self.rng.randint(0, 9)
        self.state = {"counters": {"a": start, "b": 0}}
        return [
            Turn(user="Add 3 to a and 2 to b.", calls=[call("add", name="a", amount=3), call("add", name="b", amount=2)]),
            Turn(user="What is a now?", calls=[call("get", name="a")], outputs=[str(start + 3)]),
        ]

    def tool_add(self, name, amount=1):
        if name not in self.state["counters"]:
            raise ToolError(f"no counter {name}")
        self.state["counters"][name] += amount
        return {"value": self.state["counters"][name]}

    def tool_get(self, name):
        if name not in self.state["counters"]:
            raise ToolError(f"no counter {name}")
        return self.state["counters"][name]


class CheckedCounterEnv(CounterEnv):
    advance_on = "check"


def tc(tool: str, /, **args) -> str:
    return call(tool, **args).to_tag()


# --- declarations -------------------------------------------------------------------


def _declare(tools, **methods):
    return type("DeclaredEnv", (ToolEnv,), {"tools": tools, **methods})


def test_schema_parameter_missing_from_the_method_is_rejected():
    with pytest.raises(ToolSchemaError, match="schema parameter 'extra' is not a parameter of tool_get"):
        _declare(
            [function_schema("get", "", {"name": {"type": "string"}, "extra": {"type": "string"}}, ["name", "extra"])],
            tool_get=lambda self, name: name,
        )


def test_method_parameter_missing_from_the_schema_is_rejected():
    with pytest.raises(ToolSchemaError, match="method parameter 'limit' is missing from the schema"):
        _declare([function_schema("get", "", {"name": {"type": "string"}}, ["name"])], tool_get=lambda self, name, limit=3: name)


def test_required_must_match_defaults_both_ways():
    with pytest.raises(ToolSchemaError) as err:
        _declare(
            [function_schema("get", "", {"name": {"type": "string"}, "limit": {"type": "integer"}}, ["limit"])],
            tool_get=lambda self, name, limit=3: name,
        )
    assert "'name' has no default but is not listed as required" in str(err.value)
    assert "'limit' has a default but is listed as required" in str(err.value)
    assert len(err.value.problems) == 2
    assert isinstance(err.value, SpadeError)


def test_tools_and_methods_must_pair_up_and_types_must_be_json_schema():
    with pytest.raises(ToolSchemaError) as err:
        _declare(
            [function_schema("get", "", {"n": {"type": "float"}}, ["n"]), function_schema("ghost", "")],
            tool_get=lambda self, n: n,
            tool_orphan=lambda self: 1,
        )
    text = str(err.value)
    assert "unknown type 'float'" in text
    assert "tool 'ghost' has no method tool_ghost" in text
    assert "method tool_orphan has no schema" in text


def test_var_keyword_tools_and_duplicate_names_are_rejected():
    with pytest.raises(ToolSchemaError, match=r"\*args/\*\*kwargs are not allowed"):
        _declare([function_schema("get", "")], tool_get=lambda self, **kw: kw)
    with pytest.raises(ToolSchemaError, match="declared twice"):
        _declare([function_schema("get", ""), function_schema("get", "")], tool_get=lambda self: 1)


def test_flat_schemas_are_accepted_and_exposed_in_openai_format():
    cls = _declare(
        [{"name": "get", "description": "d", "parameters": {"type": "object", "properties": {}, "required": []}}],
        tool_get=lambda self: 1,
    )
    assert cls().get_tool_schemas() == [
        {"type": "function", "function": {"name": "get", "description": "d", "parameters": {"type": "object", "properties": {}, "required": []}}}
    ]


def test_bad_advance_mode_is_rejected_at_class_creation():
    with pytest.raises(ToolSchemaError, match="advance_on"):
        type("BadEnv", (CounterEnv,), {"advance_on": "whenever"})


# --- episodes ------------------------------------------------------------------------


def play(env: ToolEnv, actions: list[str], seed: int = 1):
    env.reset(seed=seed)
    out = []
    for a in actions:
        out.append(env.step(a))
    return out


def test_solution_replay_reaches_full_reward_in_both_modes():
    for cls in (CounterEnv, CheckedCounterEnv):
        env = cls()
        env.reset(seed=5)
        results = [env.step(a) for a in env.solution()]
        assert results[-1][1] == 1.0 and results[-1][2] is True
        assert [r[1] for r in results] == [0.5, 1.0]


def test_several_calls_in_one_action_run_in_order():
    env = CounterEnv()
    env.reset(seed=1)
    obs, *_ = env.step(tc("add", name="a", amount=3) + "thinking..." + tc("get", name="a"))
    start = env.state["counters"]["a"] - 3
    assert obs.index('"name": "add"') < obs.index('"name": "get"')
    assert f'"content": {start + 3}' in obs


def test_reply_mode_advances_when_the_agent_replies_without_calls():
    env = CounterEnv()
    env.reset(seed=2)
    _, r, term, _, info = env.step(tc("add", name="a", amount=3))
    assert info["turn"] == 0 and r == 0.0 and not term
    _, r, term, _, info = env.step(tc("add", name="b", amount=2))
    assert info["turn"] == 0  # state already matches, but reply mode waits for the reply
    obs, r, term, _, info = env.step("I have added them.")
    assert info["turn"] == 1 and info["turn_results"] == [True] and r == 0.5
    assert "What is a now?" in obs


def test_check_mode_advances_as_soon_as_the_turn_passes():
    env = CheckedCounterEnv()
    env.reset(seed=2)
    _, _, _, _, info = env.step(tc("add", name="a", amount=3))
    assert info["turn"] == 0
    obs, r, _, _, info = env.step(tc("add", name="b", amount=2))
    assert info["turn"] == 1 and info["advanced"] and r == 0.5
    assert "What is a now?" in obs


def test_check_mode_plain_text_is_not_a_turn_end():
    env = CheckedCounterEnv()
    env.reset(seed=2)
    obs, _, _, _, info = env.step("Let me think about this.")
    assert info["turn"] == 0 and "No tool call found" in obs


def test_an_answer_ends_the_turn_and_required_outputs_are_checked():
    env = CounterEnv()
    env.reset(seed=3)
    a = env.state["counters"]["a"]
    env.step(tc("add", name="a", amount=3) + tc("add", name="b", amount=2) + "<answer>ok</answer>")
    _, r, term, _, info = env.step(f"<answer>a is {a + 4}</answer>")
    assert term and info["turn_results"] == [True, False] and r == 0.5
    env.reset(seed=3)
    env.step(env.solution()[0])
    _, r, term, _, _ = env.step(f"<answer>It is {a + 3}.</answer>")
    assert term and r == 1.0


def test_a_wrong_state_fails_the_turn_even_with_an_answer():
    env = CounterEnv()
    env.reset(seed=4)
    _, r, _, _, info = env.step(tc("add", name="a", amount=30) + "<answer>done</answer>")
    assert info["turn_results"] == [False] and r == 0.0


def test_extra_state_changes_fail_but_extra_reads_do_not():
    env = CounterEnv()
    env.reset(seed=4)
    env.step(tc("get", name="a") + tc("add", name="a", amount=3) + tc("add", name="b", amount=2) + tc("get", name="b"))
    _, r, *_ = env.step("<answer>done</answer>")
    assert r == 0.5
    env.reset(seed=4)
    env.step(tc("add", name="a", amount=3) + tc("add", name="b", amount=2) + tc("add", name="b", amount=0))
    _, r, *_ = env.step("<answer>done</answer>")
    assert r == 0.5  # adding zero leaves the state equal: only the state is graded
    env.reset(seed=4)
    env.step(tc("add", name="a", amount=3) + tc("add", name="b", amount=3))
    _, r, *_ = env.step("<answer>done</answer>")
    assert r == 0.0


@pytest.mark.parametrize(
    ("action", "needle"),
    [
        ("<tool_call>{oops</tool_call>", "could not parse your tool call"),
        ('<tool_call>{"name": "teleport", "arguments": {}}</tool_call>', "unknown tool 'teleport'"),
        ('<tool_call>{"name": "add", "arguments": {"amount": 1}}</tool_call>', "missing required argument(s) name"),
        ('<tool_call>{"name": "add", "arguments": {"name": "a", "speed": 1}}</tool_call>', "unknown argument(s) speed"),
        ('<tool_call>{"name": "add", "arguments": {"name": "a", "amount": "3"}}</tool_call>', "must be integer"),
        ('<tool_call>{"name": "add", "arguments": {"name": "zz"}}</tool_call>', "no counter zz"),
        ('<tool_call>["add"]</tool_call>', "could not parse"),
    ],
)
def test_bad_calls_become_error_observations_and_change_nothing(action, needle):
    env = CounterEnv()
    env.reset(seed=1)
    before = env.state
    obs, r, term, trunc, info = env.step(action)
    assert needle in obs
    assert env.state == before and not term and not trunc and r == 0.0


def test_a_failing_tool_leaves_the_state_unchanged():
    class PartialEnv(CounterEnv):
        def tool_add(self, name, amount=1):
            self.state["counters"]["a"] += 100
            raise ToolError("half-done")

    env = PartialEnv()
    env.reset(seed=1)
    before = dict(env.state["counters"])
    obs, *_ = env.step(tc("add", name="a"))
    assert "half-done" in obs and env.state["counters"] == before


def test_a_crashing_tool_is_reported_not_raised():
    class BuggyEnv(CounterEnv):
        def tool_get(self, name):
            return self.state["counters"][name] / (1 if name == "a" else 0)

    env = BuggyEnv()
    env.reset(seed=1)
    obs, *_ = env.step(tc("get", name="b"))
    assert "internal error in tool 'get': ZeroDivisionError" in obs


def test_reference_calls_that_do_not_fit_their_schema_fail_at_reset():
    class BrokenEnv(CounterEnv):
        def build(self):
            self.state = {"counters": {"a": 0, "b": 0}}
            return [Turn(user="x", calls=[call("add", nme="a")])]

    with pytest.raises(ToolEnvError, match="reference call add"):
        BrokenEnv().reset(seed=0)


def test_a_reference_solution_failing_its_own_check_fails_at_reset():
    class ContradictoryEnv(CounterEnv):
        def build(self):
            self.state = {"counters": {"a": 0, "b": 0}}
            return [Turn(user="x", calls=[call("add", name="a")], check=lambda s: s["counters"]["a"] == 5)]

    with pytest.raises(ToolEnvError, match="fail the turn's check"):
        ContradictoryEnv().reset(seed=0)


def test_state_must_be_json():
    class SetStateEnv(CounterEnv):
        def build(self):
            self.state = {"tags": {1, 2}}
            return [Turn(user="x")]

    with pytest.raises(ToolEnvError, match="not JSON-serialisable"):
        SetStateEnv().reset(seed=0)


def test_predicates_gate_the_turn():
    class PredicateEnv(CounterEnv):
        advance_on = "check"

        def build(self):
            self.state = {"counters": {"a": 0, "b": 0}}
            return [
                Turn(user="make a positive", calls=[call("add", name="a", amount=2)], check=lambda s: s["counters"]["a"] > 0),
                Turn(user="then b", calls=[call("add", name="b")]),
            ]

    env = PredicateEnv()
    env.reset(seed=0)
    _, _, _, _, info = env.step(tc("add", name="a", amount=2))
    assert info["turn"] == 1


def test_max_steps_truncates():
    env = type("ShortEnv", (CounterEnv,), {"max_steps": 3})()
    env.reset(seed=0)
    results = [env.step(tc("get", name="a")) for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True]
    assert all(r[2] is False for r in results)


def test_same_seed_same_episode_and_different_seeds_differ():
    a, b = CounterEnv(), CounterEnv()
    assert a.reset(seed=11) == b.reset(seed=11)
    assert a.solution() == b.solution() and a.state == b.state
    states = set()
    for s in range(20):
        e = CounterEnv()
        e.reset(seed=s)
        states.add(e.state["counters"]["a"])
    assert len(states) > 1


def test_step_before_reset_is_a_clear_error():
    with pytest.raises(ToolEnvError, match="before reset"):
        CounterEnv().step("x")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions=st.lists(st.text(max_size=200) | st.sampled_from([tc("add", name="a"), "<answer>x</answer>", "<tool_call>"]), max_size=8))
def test_any_text_is_a_valid_action(actions):
    for cls in (CounterEnv, CheckedCounterEnv):
        env = cls()
        env.reset(seed=0)
        for a in actions:
            obs, r, term, trunc, info = env.step(a)
            assert isinstance(obs, str) and 0.0 <= r <= 1.0
            assert type(term) is bool and type(trunc) is bool
            if term:
                break


def test_ignored_keys_are_left_out_of_the_state_comparison():
    class LoggingEnv(CounterEnv):
        ignore_keys = ("log",)

        def build(self):
            turns = super().build()
            self.state["log"] = []
            return turns

        def tool_get(self, name):
            self.state["log"].append(name)  # reads leave a trace the grader must not see
            return super().tool_get(name)

    env = LoggingEnv()
    env.reset(seed=2)
    env.step(tc("get", name="b") + tc("add", name="a", amount=3) + tc("add", name="b", amount=2) + "<answer>ok</answer>")
    assert env.state["log"] == ["b"]
    _, reward, *_ = env.step(env.solution()[1])
    assert reward == 1.0


def test_reference_calls_may_be_pairs_or_dicts():
    class FormsEnv(CounterEnv):
        def build(self):
            self.state = {"counters": {"a": 0, "b": 0}}
            return [Turn(user="x", calls=[("add", {"name": "a"}), {"name": "add", "arguments": {"name": "b", "amount": 4}}])]

    env = FormsEnv()
    env.reset(seed=0)
    assert env.solution() == [tc("add", name="a") + "\n" + tc("add", name="b", amount=4) + "\n<answer>Done.</answer>"]
    assert env.step(env.solution()[0])[1] == 1.0


def test_a_schema_mismatch_in_loaded_source_is_a_load_error_naming_the_problem():
    from spade_core.errors import EnvLoadError
    from spade_core.source import load_trusted_class

    source = (
        "from spade_tooluse.base import ToolEnv, Turn, function_schema\n"
        "class BadEnv(ToolEnv):\n"
        "    tools = [function_schema('go', 'Go.', {'where': {'type': 'string'}}, ['where'])]\n"
        "    def build(self):\n"
        "        return [Turn(user='go')]\n"
        "    def tool_go(self, place):\n"
        "        return place\n"
    )
    with pytest.raises(EnvLoadError, match="schema parameter 'where' is not a parameter of tool_go"):
        load_trusted_class(source)
