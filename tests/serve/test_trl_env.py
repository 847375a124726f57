"""The TRL adapter (:mod:`spade_serve.trl_env`) against TRL's contract, on real sandboxed
registry environments, a real store and a real ``spade serve`` server.

What TRL does with an instance is reproduced with TRL's and transformers' own functions:
tools are the public functions of the instance's class (``inspect.getmembers(...,
isfunction)`` less ``reset`` / ``get_reward``, as ``GRPOTrainer`` lists them), and their
schemas are transformers' ``get_json_schema``, what the chat template renders.
"""

from __future__ import annotations

import inspect
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from spade_core.config import load_config
from spade_core.metadata import ActionFormat, EnvMetadata, EnvStatus
from spade_core.store import EnvStore
from spade_serve.trl_env import (
    ACT_INSTRUCTIONS,
    BoxedEnvironment,
    EnvironmentFailed,
    EpisodeOver,
    SpadeEnvironment,
    ToolArgumentError,
    TrlEnvError,
    TrlEnvironments,
    episode_return,
    episode_state,
    tool_use_class,
)
from transformers.utils import get_json_schema

from .conftest import Serve
from .envs import served

GAME = "polynomial_probe-v1"
TOOLS = "tooluse.math_toolkit-v1"

#: A boxed-action counter: "\boxed{win}" ends the episode with reward 1, "\boxed{hang}"
#: spins until the sandbox deadline kills the worker.
BOXED_COUNTER = '''
import random


class CounterEnv:
    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(0, 10**9)
        self.turn = 0
        return f"secret {self.secret}", {}

    def step(self, action):
        command = action.removeprefix("\\\\boxed{").removesuffix("}")
        if command == "hang":
            while True:
                pass
        self.turn += 1
        won = command == "win"
        return f"turn {self.turn}: {command}", 1.0 if won else 0.0, won, False, {}
'''


def trl_tools(instance: Any) -> dict[str, Any]:
    """The tools ``GRPOTrainer`` takes from an environment instance, by name."""
    return {
        name: getattr(instance, name)
        for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


@pytest.fixture(scope="module")
def envs() -> Iterator[TrlEnvironments]:
    with TrlEnvironments([GAME, TOOLS], seed=7) as chosen:
        yield chosen


def _solution(env_id: str, seed: int) -> list[str]:
    env = gym.make(f"spade/{env_id}")
    env.reset(seed=seed)
    try:
        return list(env.unwrapped.solution())
    finally:
        env.close()


# --- tools as TRL sees them ------------------------------------------------------------


def test_a_boxed_environment_exposes_exactly_the_act_tool(envs: TrlEnvironments) -> None:
    instance = envs.factory(GAME)()
    assert isinstance(instance, BoxedEnvironment)
    assert list(trl_tools(instance)) == ["act"]
    schema = get_json_schema(instance.act)["function"]
    assert schema["name"] == "act"
    assert schema["parameters"]["properties"]["command"]["type"] == "string"
    assert schema["parameters"]["required"] == ["command"]


def test_a_tool_use_environment_exposes_its_own_schemas_plus_answer(envs: TrlEnvironments) -> None:
    instance = envs.factory(TOOLS)()
    declared = {s["function"]["name"]: s["function"] for s in instance._env.tools}  # the environment's own schemas
    tools = trl_tools(instance)
    assert set(tools) == set(declared) | {"answer"}
    for name, spec in declared.items():
        shown = get_json_schema(tools[name])["function"]
        assert shown["name"] == name
        assert shown["description"] == spec["description"]
        params = spec["parameters"]
        assert set(shown["parameters"]["properties"]) == set(params["properties"])
        assert sorted(shown["parameters"].get("required", [])) == sorted(params.get("required", []))
        for pname, pspec in params["properties"].items():
            got = shown["parameters"]["properties"][pname]
            assert got["type"] == pspec["type"], (name, pname)
            if "items" in pspec:
                assert got["items"]["type"] == pspec["items"]["type"], (name, pname)
    assert get_json_schema(tools["answer"])["function"]["parameters"]["required"] == ["text"]


def test_every_tool_use_seed_can_be_shown_to_the_model() -> None:
    with TrlEnvironments(domain="tooluse") as every:
        assert len(every.env_ids) >= 18
        for env_id in every.env_ids:
            instance = every.factory(env_id)()
            for tool in trl_tools(instance).values():
                get_json_schema(tool)  # raises if transformers cannot read a schema back


_SCALARS = st.sampled_from(["string", "integer", "number", "boolean"])
_PARAM = st.one_of(
    _SCALARS.map(lambda t: {"type": t}),
    _SCALARS.map(lambda t: {"type": "array", "items": {"type": t}}),
    st.just({"type": "object"}),
    st.lists(st.text("abcxyz", min_size=1, max_size=4), min_size=1, max_size=4, unique=True).map(
        lambda values: {"type": "string", "enum": values}
    ),
)
_NAMES = st.text("abcdefgh_", min_size=1, max_size=8).filter(lambda n: n.isidentifier() and not n.startswith("_"))


@settings(deadline=None)  # the first example pays transformers' lazy imports
@given(
    st.dictionaries(_NAMES, _PARAM, max_size=5),
    st.data(),
    st.text(min_size=1, max_size=40).filter(lambda d: d.strip() and "Args:" not in d and "Returns:" not in d),
)
def test_any_schema_of_json_types_reads_back_the_same(properties: dict[str, Any], data: Any, description: str) -> None:
    required = data.draw(st.lists(st.sampled_from(sorted(properties)), unique=True) if properties else st.just([]))
    schema = {"type": "function", "function": {"name": "probe", "description": description,
                                               "parameters": {"type": "object", "properties": properties,
                                                              "required": required}}}
    cls = tool_use_class("probe-v1", [schema])
    shown = get_json_schema(cls.probe)["function"]
    assert shown["description"] == " ".join(description.split())
    assert sorted(shown["parameters"].get("required", [])) == sorted(required)
    for name, spec in properties.items():
        got = dict(shown["parameters"]["properties"][name])
        got.pop("description")
        assert got == spec, name


def test_a_skill_keeps_that_skills_environments_only() -> None:
    with TrlEnvironments(domain="tooluse", skill="tool_selection") as chosen:
        assert chosen.env_ids and all(i.startswith("tooluse.") for i in chosen.env_ids)
        assert TOOLS in chosen.env_ids and "tooluse.bank_ledger-v1" not in chosen.env_ids


def test_tool_schemas_trl_could_not_call_are_refused_by_name() -> None:
    def fn(name: str, props: dict[str, Any]) -> dict[str, Any]:
        return {"type": "function", "function": {"name": name, "description": "d", "parameters": {"properties": props}}}

    with pytest.raises(TrlEnvError, match="'reset' is reserved"):
        tool_use_class("x-v1", [fn("reset", {})])
    with pytest.raises(TrlEnvError, match="'get-file' is not a Python identifier"):
        tool_use_class("x-v1", [fn("get-file", {})])
    with pytest.raises(TrlEnvError, match="parameter 'from'"):
        tool_use_class("x-v1", [fn("move", {"from": {"type": "string"}})])
    with pytest.raises(TrlEnvError, match="two tools are named 'move'"):
        tool_use_class("x-v1", [fn("move", {}), fn("move", {})])


#: A tool-use environment whose tools are named ``TOOL_NAMES``: each call is echoed, and the
#: episode ends with reward 1 once every tool has been called.
NAMED_TOOLS = '''
import json
import re

NAMES = {names!r}


class NamedToolsEnv:
    tool_schemas = [
        {{"type": "function", "function": {{"name": n, "description": f"The {{n}} tool.", "parameters": {{
            "type": "object", "properties": {{"value": {{"type": "string", "description": "Any text."}}}},
            "required": ["value"]}}}}}}
        for n in NAMES
    ]

    def reset(self, seed=None):
        self.called = []
        return "call every tool once", {{}}

    def step(self, action):
        call = json.loads(re.search(r"<tool_call>(.*)</tool_call>", action, re.DOTALL).group(1))
        self.called.append(call["name"])
        done = set(self.called) == set(NAMES)
        return f"{{call['name']}}({{call['arguments']['value']}})", 1.0 if done else 0.0, done, False, {{}}
'''


def test_tools_named_like_the_adapters_own_attributes_are_the_tools(tmp_path: Path) -> None:
    # Every public name an instance has, bar the three TRL or the adapter call (refused above):
    # a tool named `done`, `steps` or `episode_return` must neither break the adapter nor be
    # hidden from TRL behind the adapter's state.
    reserved = {"reset", "get_reward", "answer"}
    names = sorted({n for n in dir(tool_use_class("probe-v1", [])) if not n.startswith("_")} - reserved)
    assert {"done", "episode_return", "steps", "env_id", "actions", "terminated"} <= set(names)
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with EnvStore(url) as store:
        meta = store.add(NAMED_TOOLS.format(names=names), EnvMetadata(
            name="named_tools", domain="testing", skill="naming", max_turns=len(names) + 2,
            class_name="NamedToolsEnv", action_format=ActionFormat.tool_call))
        store.set_status(meta.id, EnvStatus.admitted)
    with TrlEnvironments([meta.id], config=load_config(store_url=url)) as chosen:
        instance = chosen.factory()()
        tools = trl_tools(instance)
        assert set(tools) == set(names) | {"answer"}
        assert all(get_json_schema(tools[n])["function"]["name"] == n for n in names)
        instance.reset(seed=0)
        for i, name in enumerate(names):
            assert tools[name](value=str(i)).startswith(f"{name}({i})")
        state = episode_state(instance)
        assert state.steps == len(names) and state.terminated and state.done
        assert state.env_id == meta.id and len(state.actions) == len(names)
        assert instance.get_reward() == 1.0
        assert isinstance(instance, SpadeEnvironment)


# --- episodes ----------------------------------------------------------------------------


def test_reset_seeds_the_episode_from_the_row_and_prepends_the_instructions(envs: TrlEnvironments) -> None:
    a, b = envs.factory(GAME)(), envs.factory(GAME)()
    assert a.reset(seed=11, prompt=[], environment=GAME).startswith(ACT_INSTRUCTIONS)
    assert a.last_seed == 11 and a.steps == 0 and not a.done
    b.reset(seed=11)
    assert a.act("query 3") == b.act("query 3")  # the same hidden polynomial
    b.reset(seed=12)
    assert b.act("query 3") != a.act("query 3")


def test_reset_without_a_seed_draws_from_the_adapters_seed_sequence() -> None:
    observed = []
    for _ in range(2):
        with TrlEnvironments([GAME], seed=3, seeds_in_process=True) as chosen:
            instance = chosen.factory()()
            observed.append([(instance.reset(), instance.last_seed)[1] for _ in range(3)])
    assert observed[0] == observed[1] and len(set(observed[0])) == 3


def test_a_won_episode_returns_one_and_later_calls_are_refused(envs: TrlEnvironments) -> None:
    (action,) = _solution(GAME, 5)
    instance = envs.factory(GAME)()
    instance.reset(seed=5)
    assert instance.get_reward() == 0.0  # nothing played yet
    reply = instance.act(action.removeprefix("\\boxed{").removesuffix("}"))
    assert instance.terminated and instance.last_reward == 1.0
    assert reply.endswith("[The episode is over.]")
    assert instance.get_reward() == 1.0
    with pytest.raises(EpisodeOver, match=r"over \(it was terminated after 1 step\(s\)\).*not played"):
        instance.act("query 0")
    assert instance.steps == 1 and instance.actions == [action]
    instance.reset(seed=5)
    assert instance.steps == 0 and not instance.done and instance.get_reward() == 0.0


def test_an_episode_cut_by_the_turn_limit_returns_zero(envs: TrlEnvironments) -> None:
    instance = envs.factory(GAME)()
    instance.reset(seed=1)
    replies = [instance.act("query 1") for _ in range(12)]  # max_turns = 12
    assert instance.truncated and not instance.terminated
    assert replies[-1].endswith("[The episode is over: turn limit reached.]")
    assert instance.get_reward() == 0.0
    with pytest.raises(EpisodeOver, match="truncated"):
        instance.act("query 2")


def test_bad_tool_arguments_are_explained_to_the_model_without_a_step(envs: TrlEnvironments) -> None:
    tools = envs.factory(TOOLS)()
    tools.reset(seed=2)
    with pytest.raises(ToolArgumentError) as caught:
        tools.mean(nums=[1, 2])
    assert str(caught.value) == (
        "mean(): unknown argument(s) 'nums'; missing required argument(s) 'numbers'. It takes: numbers."
    )
    with pytest.raises(ToolArgumentError, match=r"answer\(text\) takes a string, got 3"):
        tools.answer(text=3)
    assert tools.steps == 0
    game = envs.factory(GAME)()
    game.reset(seed=2)
    with pytest.raises(ToolArgumentError, match=r'act\(command\) takes a string, got 5 \(int\); call it as \{"command"'):
        game.act(command=5)
    assert game.steps == 0


def test_a_tool_use_call_is_stepped_as_a_tool_call_tag(envs: TrlEnvironments) -> None:
    tools = envs.factory(TOOLS)()
    tools.reset(seed=2)
    reply = tools.mean(numbers=[1, 2, 6])
    assert tools.actions == ['<tool_call>{"name": "mean", "arguments": {"numbers": [1, 2, 6]}}</tool_call>']
    assert '"content": 3.0' in reply
    # a value of the wrong type reaches the environment, whose own error the model reads
    reply = tools.square_root(x="nine")
    assert tools.steps == 2 and "square_root" in reply


def test_a_tool_use_episode_played_to_the_end_returns_its_reward(envs: TrlEnvironments) -> None:
    import json
    import re

    instance = envs.factory(TOOLS)()
    instance.reset(seed=4)
    for message in _solution(TOOLS, 4):  # one message per request: its calls, then the answer
        reply = ""
        for payload in re.findall(r"<tool_call>(.*?)</tool_call>", message, re.DOTALL):
            call = json.loads(payload)
            reply = getattr(instance, call["name"])(**call["arguments"])
        answer = re.search(r"<answer>(.*?)</answer>", message, re.DOTALL)
        # this environment moves on as soon as a request's state is reached ("check" mode)
        if answer and not instance.done and "User (request" not in reply:
            instance.answer(text=answer.group(1))
    assert instance.terminated and instance.get_reward() == 1.0


@settings(deadline=None)
@given(
    st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False, width=32)),
    st.booleans(),
    st.booleans(),
)
def test_the_return_is_the_self_play_trainers_episode_return(last: float | None, terminated: bool, hung: bool) -> None:
    from spade_core.returns import episode_return as the_rule
    from spade_trainer.rewards import episode_return as trainers

    assert episode_return(last, terminated, hung=hung) == trainers(last, terminated, hung=hung)
    assert episode_return(last, terminated, hung=hung) == the_rule(last, terminated, hung=hung)


# --- the dataset TRL routes with ---------------------------------------------------------


def test_dataset_rows_cycle_environments_with_consecutive_seeds(envs: TrlEnvironments) -> None:
    rows = envs.dataset_rows(5, seed=100, prompt="Play well.")
    assert [r["environment"] for r in rows] == [GAME, TOOLS, GAME, TOOLS, GAME]
    assert [r["seed"] for r in rows] == [100, 101, 102, 103, 104]
    assert rows[0]["prompt"] == [{"role": "user", "content": "Play well."}]
    assert set(envs.environment_factory) == {GAME, TOOLS}
    dataset = envs.dataset(4)
    assert dataset.column_names == ["prompt", "environment", "seed"] and len(dataset) == 4
    with pytest.raises(TrlEnvError, match="episodes must be a positive integer"):
        envs.dataset_rows(0)


# --- choosing, failures and closing -------------------------------------------------------


def test_choices_that_match_nothing_are_errors_that_say_so() -> None:
    with pytest.raises(TrlEnvError, match="name environment ids or a domain"):
        TrlEnvironments()
    with pytest.raises(TrlEnvError, match="no environment 'no_such_env'"):
        TrlEnvironments(["no_such_env"])
    with pytest.raises(TrlEnvError, match=r"no environment of skill 'juggling' \(its skills: .*tool_selection"):
        TrlEnvironments(domain="tooluse", skill="juggling")
    with pytest.raises(TrlEnvError, match="needs a domain"):
        TrlEnvironments([GAME], skill="x")


def test_a_hung_step_ends_the_episode_with_the_hang_penalty_and_the_next_reset_reopens(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with EnvStore(url) as store:
        meta = store.add(BOXED_COUNTER, EnvMetadata(name="counter", domain="testing", skill="counting", max_turns=5,
                                                    class_name="CounterEnv"))
        store.set_status(meta.id, EnvStatus.admitted)
    config = load_config(store_url=url)
    with TrlEnvironments([meta.id], config=config, call_timeout_s=1.0) as chosen:
        instance = chosen.factory()()
        instance.reset(seed=1)
        assert instance.act("one") == "turn 1: one"
        with pytest.raises(EnvironmentFailed, match=r"failed on this action \(timeout\).*The episode is over"):
            instance.act("hang")
        assert instance.hung and instance.done and instance.get_reward() == -0.5
        with pytest.raises(EpisodeOver, match="hung"):
            instance.act("win")
        instance.reset(seed=1)  # a new worker
        assert instance.act("win").startswith("turn 1: win") and instance.get_reward() == 1.0


def test_close_closes_every_instance_and_the_owned_pool() -> None:
    chosen = TrlEnvironments([GAME])
    made = [chosen.factory()() for _ in range(3)]
    for instance in made:
        instance.reset(seed=0)
    pool = chosen.sandbox.pool
    assert pool is not None and not pool.closed
    chosen.close()
    assert pool.closed and all(i._env is None for i in made)
    chosen.close()  # idempotent
    with pytest.raises(TrlEnvError, match="closed"):
        chosen.factory()()
    with pytest.raises(TrlEnvError, match="closed"):
        made[0].reset(seed=0)


# --- remote sessions -----------------------------------------------------------------------


def test_remote_environments_play_through_a_spade_serve_server(serve: Serve) -> None:
    with serve(envs=[served("counter", BOXED_COUNTER)]) as (url, manager):
        with TrlEnvironments(["counter"], url=url) as chosen:
            assert chosen.env_ids == ["counter-v1"]
            instance = chosen.factory()()
            first = instance.reset(seed=9)
            assert first.endswith(f"secret {random.Random(9).randint(0, 10**9)}")
            assert instance.act("win").startswith("turn 1: win")
            assert instance.get_reward() == 1.0
            assert len(manager.sessions) == 1
        deadline = time.monotonic() + 10
        while manager.sessions and time.monotonic() < deadline:  # the server closes it asynchronously
            time.sleep(0.02)
        assert not manager.sessions  # close() ended the session on the server
        with pytest.raises(TrlEnvError, match="does not serve 'other'"):
            TrlEnvironments(["other"], url=url)


def test_a_remote_tool_use_environment_gets_its_tools_from_the_first_reset(serve: Serve) -> None:
    from spade_core.app.catalog import Catalog, open_store
    from spade_core.plugins import get_plugins
    from spade_serve.catalog import served_env

    plugins = get_plugins()
    with open_store(load_config(), read_only=True) as store:
        catalog = Catalog(plugins, store)
        tool_env = served_env(catalog.resolve(TOOLS), catalog)
    with serve(envs=[tool_env]) as (url, _manager), TrlEnvironments(domain="tooluse", url=url) as chosen:
        assert chosen.env_ids == [TOOLS]
        instance = chosen.factory()()
        assert set(trl_tools(instance)) >= {"mean", "store", "recall", "answer"}
        instance.reset(seed=2)
        assert '"content": 3.0' in instance.mean(numbers=[1, 2, 6])
        with pytest.raises(ToolArgumentError, match="missing required argument"):
            instance.store(name="avg")
