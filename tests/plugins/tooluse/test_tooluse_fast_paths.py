"""The fast paths of the tool-use base class behave exactly like the plain algorithm.

``state_copy`` must equal ``copy.deepcopy`` (values, types, aliasing); the replay without
per-call snapshots (with its fallback) and the cached tool listing must give the same
observations, rewards, infos and states as the original base class, which
:mod:`spade_tooluse.plain_grading` keeps as the reference (``copy.deepcopy``, a snapshot
before every call, a replay at every reset).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spade_core.actions import format_tool_calls
from spade_core.source import load_trusted_class
from spade_tooluse.base import ToolEnv, ToolEnvError, ToolError, Turn, call, function_schema
from spade_tooluse.catalog import seed_envs
from spade_tooluse.plain_grading import plain
from spade_tooluse.state_copy import state_copy

# --- state_copy == copy.deepcopy ---------------------------------------------------------

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=6))
other_leaves = st.one_of(st.tuples(st.integers(), st.text(max_size=3)), st.frozensets(st.integers(), max_size=3), st.binary(max_size=3))
trees = st.recursive(
    json_scalars | other_leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4) | st.integers(), inner, max_size=4)
    | st.tuples(inner, inner),
    max_leaves=25,
)


def _shape(value: Any, seen: dict[int, int]) -> Any:
    """A description of ``value`` that records types and which containers are the same object."""
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        if id(value) in seen:
            return ("alias", seen[id(value)])
        seen[id(value)] = len(seen)
        if isinstance(value, dict):
            return (type(value).__name__, [(_shape(k, seen), _shape(v, seen)) for k, v in value.items()])
        if isinstance(value, (set, frozenset)):
            return (type(value).__name__, sorted(repr(v) for v in value))
        return (type(value).__name__, [_shape(v, seen) for v in value])
    return (type(value).__name__, repr(value))


def _mutable_ids(value: Any, out: set[int]) -> set[int]:
    if isinstance(value, (dict, list)):
        out.add(id(value))
        for v in value.values() if isinstance(value, dict) else value:
            _mutable_ids(v, out)
    elif isinstance(value, tuple):
        for v in value:
            _mutable_ids(v, out)
    return out


@given(trees)
def test_state_copy_equals_deepcopy_on_any_tree(tree):
    ours, theirs = state_copy(tree), copy.deepcopy(tree)
    assert _shape(ours, {}) == _shape(theirs, {})
    assert not _mutable_ids(ours, set()) & _mutable_ids(tree, set()), "a mutable container is shared with the original"


@given(trees, trees, st.integers(0, 3))
def test_state_copy_keeps_aliasing_and_cycles_as_deepcopy_does(a, b, where):
    shared = [a]
    state: Any = {"x": shared, "y": [shared, (shared, b)], "z": {"again": shared}}
    if where == 1:
        state["self"] = state  # a cycle through a dict
    elif where == 2:
        shared.append(shared)  # a cycle through a list
    ours, theirs = state_copy(state), copy.deepcopy(state)
    assert _shape(ours, {}) == _shape(theirs, {})
    assert ours["x"] is ours["y"][0] is ours["y"][1][0] is ours["z"]["again"]
    assert ours["x"] is not shared


def test_state_copy_leaves_subclasses_to_deepcopy():
    from collections import OrderedDict, defaultdict

    state = {"o": OrderedDict(a=[1]), "d": defaultdict(list, k=[2])}
    ours = state_copy(state)
    assert type(ours["o"]) is OrderedDict and type(ours["d"]) is defaultdict
    assert ours == state and ours["o"]["a"] is not state["o"]["a"]


# --- the reference semantics of the base class -----------------------------------------


SEEDS = {s.name: load_trusted_class(s.source(), s.class_name) for s in seed_envs()}


def _strings_in(value: Any, out: list[str]) -> list[str]:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            out.append(str(k))
            _strings_in(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings_in(v, out)
    return out


def _random_action(data, env: ToolEnv) -> str:
    """A message an agent might send: the reference action of the turn, random calls to
    the env's tools with arguments drawn from its state (so some succeed, some fail), a
    bare reply, an answer or garbage."""
    kind = data.draw(st.sampled_from(["reference", "calls", "calls", "reply", "answer", "garbage"]))
    if kind == "reference":
        actions = env.solution()
        return actions[min(env._te_turn, len(actions) - 1)]
    if kind == "reply":
        return data.draw(st.sampled_from(["ok", "I am not sure.", "3"]))
    if kind == "answer":
        return "<answer>" + data.draw(st.sampled_from(["Done.", "42", "yes"])) + "</answer>"
    if kind == "garbage":
        return data.draw(st.sampled_from(["<tool_call>{nope</tool_call>", '<tool_call>{"name": "no_such_tool", "arguments": {}}</tool_call>']))
    pool = _strings_in(env.state, [])[:60] or ["x"]
    calls = []
    for _ in range(data.draw(st.integers(1, 3))):
        schema = data.draw(st.sampled_from(type(env)._te_schemas))["function"]
        arguments: dict[str, Any] = {}
        for pname, prop in schema["parameters"]["properties"].items():
            if pname not in schema["parameters"]["required"] and data.draw(st.booleans()):
                continue
            t = prop.get("type")
            if "enum" in prop:
                arguments[pname] = data.draw(st.sampled_from(prop["enum"]))
            elif t == "integer":
                arguments[pname] = data.draw(st.integers(-2, 500))
            elif t == "number":
                arguments[pname] = data.draw(st.sampled_from([0, 1.5, -3, 250.0]))
            elif t == "boolean":
                arguments[pname] = data.draw(st.booleans())
            elif t == "array":
                arguments[pname] = data.draw(st.lists(st.sampled_from(pool), max_size=2))
            elif t == "object":
                arguments[pname] = {}
            else:
                arguments[pname] = data.draw(st.sampled_from(pool))
        calls.append(call(schema["name"], **arguments))
    return format_tool_calls(calls)


@pytest.mark.parametrize("name", sorted(SEEDS))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(seed=st.integers(0, 2**31 - 1), data=st.data())
def test_seed_envs_play_exactly_as_under_the_plain_semantics(name, seed, data):
    fast, ref = SEEDS[name](), plain(SEEDS[name])()
    assert fast.reset(seed=seed) == ref.reset(seed=seed)
    assert fast._te_targets == ref._te_targets
    for _ in range(data.draw(st.integers(1, 12))):
        action = _random_action(data, fast)
        got, want = fast.step(action), ref.step(action)
        assert got == want, action
        assert fast.state == ref.state
        if got[2] or got[3]:
            break


# --- the fallback replay, when a reference call does not succeed -----------------------


class Ledger(ToolEnv):
    """A reference solution that deliberately includes a refused call, which mutates the
    state before refusing: the target must not see that half-done change."""

    tools = [
        function_schema("pay", "Pay an amount.", {"amount": {"type": "integer"}}, ["amount"]),
        function_schema("alias", "Make 'mirror' the same list as 'paid'.", {}),
    ]

    def build(self):
        self.state = {"balance": 10, "paid": []}
        return [
            Turn(user="pay 4, then 20, then 3", calls=[call("pay", amount=4), call("pay", amount=20), call("pay", amount=3)]),
            Turn(user="mirror, then pay 50", calls=[call("alias"), call("pay", amount=50)]),
        ]

    def tool_pay(self, amount):
        self.state["paid"].append(amount)
        self.state["balance"] -= amount
        if self.state["balance"] < 0:
            raise ToolError("insufficient funds")
        return self.state["balance"]

    def tool_alias(self):
        self.state["mirror"] = self.state["paid"]
        return "ok"


def test_a_refused_reference_call_gives_the_same_targets_and_rollback():
    fast, ref = Ledger(), plain(Ledger)()
    assert fast.reset(seed=0) == ref.reset(seed=0)
    assert fast._te_targets == ref._te_targets == [
        {"balance": 3, "paid": [4, 3]},
        {"balance": 3, "paid": [4, 3], "mirror": [4, 3]},
    ]
    for action in fast.solution():
        assert fast.step(action) == ref.step(action)
        assert fast.state == ref.state
    # The rollback after the refused 50 kept 'mirror' and 'paid' one list, as deepcopy does.
    assert fast.state["mirror"] is fast.state["paid"]


def test_a_crashing_reference_call_still_fails_at_reset_with_the_same_message():
    class Crashing(Ledger):
        def tool_alias(self):
            raise KeyError("mirror")

    with pytest.raises(ToolEnvError) as fast_error:
        Crashing().reset(seed=0)
    with pytest.raises(ToolEnvError) as plain_error:
        plain(Crashing)().reset(seed=0)
    assert str(fast_error.value) == str(plain_error.value)
    assert "reference call alias({}) of turn 1 failed: internal error in tool 'alias': KeyError" in str(fast_error.value)


def test_an_overridden_schema_listing_is_asked_at_every_reset():
    class Growing(Ledger):
        asked = 0

        def get_tool_schemas(self):
            type(self).asked += 1
            return super().get_tool_schemas()[: 1 + type(self).asked % 2]

    env = Growing()
    first, _ = env.reset(seed=0)
    second, _ = env.reset(seed=0)
    assert first != second and Growing.asked == 2


# --- the per-instance target cache ------------------------------------------------------


class CountingLedger(Ledger):
    builds = 0

    def build(self):
        type(self).builds += 1
        return super().build()


def test_resetting_on_a_seed_seen_before_replays_nothing_and_plays_the_same():
    env = CountingLedger()
    first = env.reset(seed=5)
    targets = env._te_targets
    for action in env.solution():
        env.step(action)
    CountingLedger.builds = 0
    assert env.reset(seed=5) == first
    assert CountingLedger.builds == 1, "only the live build; the targets came from the cache"
    assert env._te_targets == targets
    assert [env.step(a)[1] for a in env.solution()] == [0.5, 1.0]


def test_a_build_that_is_not_a_function_of_the_seed_is_replayed_afresh():
    def drifting(base: type) -> type:
        class Drifting(base):
            count = 10

            def build(self):
                Drifting.count += 1  # class-level drift: same seed, another state
                self.state = {"balance": Drifting.count, "paid": []}
                return [Turn(user="pay 4", calls=[call("pay", amount=4)])]

        return Drifting

    env, ref = drifting(Ledger)(), plain(drifting(Ledger))()
    for _ in range(3):
        assert env.reset(seed=0) == ref.reset(seed=0)
        # The twin is built after the live env, so its target drifted one further.
        assert env._te_targets == ref._te_targets == [{"balance": env.state["balance"] + 1 - 4, "paid": [4]}]


def test_the_cache_keeps_only_the_latest_episodes():
    from spade_tooluse.base import TARGET_CACHE_SIZE

    env = Ledger()
    for seed in range(3 * TARGET_CACHE_SIZE):
        env.reset(seed=seed)
    assert len(env._te_target_cache) == TARGET_CACHE_SIZE
    assert {key[0] for key in env._te_target_cache} == set(range(2 * TARGET_CACHE_SIZE, 3 * TARGET_CACHE_SIZE))
